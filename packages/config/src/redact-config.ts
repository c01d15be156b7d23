// A copy of a config that is safe to print: tokens, API keys, bearer/admin tokens, adapter header values,
// secret-looking CLI env values and URL passwords are replaced by REDACTED. Empty values stay empty so an
// operator can still see that a secret is unset.
import type { AdapterInstanceConfig, EdgeConfig } from './types.js';

export const REDACTED = '[redacted]';

/** URL-safe stand-in swapped for REDACTED after URL serialization (which would escape the brackets). */
const PLACEHOLDER = 'iop-redacted-7f3a';

/** Env keys whose values are treated as secrets. */
const SECRET_ENV_KEY = /key|token|secret|password|passwd|auth|credential|cookie/i;

export function redactConfig(config: EdgeConfig): EdgeConfig {
  return {
    ...config,
    refresh: {
      ...config.refresh,
      admin_token: secret(config.refresh.admin_token),
      admin_keys: config.refresh.admin_keys.map((key) => ({ ...key, key: '' })),
    },
    bootstrap: { ...config.bootstrap, public_url: redactUrl(config.bootstrap.public_url) },
    openai: {
      ...config.openai,
      // The digest is what a key is checked against; the clear text is dropped, so the printed form reloads.
      api_keys: config.openai.api_keys.map((key) => ({ ...key, key: '' })),
    },
    a2a: {
      ...config.a2a,
      bearer_token: secret(config.a2a.bearer_token),
      public_url: redactUrl(config.a2a.public_url),
    },
    nodes: config.nodes.map((node) => ({
      ...node,
      token: secret(node.token),
      adapters: { instances: node.adapters.instances.map(redactInstance) },
    })),
  };
}

function redactInstance(instance: AdapterInstanceConfig): AdapterInstanceConfig {
  switch (instance.type) {
    case 'cli':
      return {
        ...instance,
        profiles: Object.fromEntries(
          Object.entries(instance.profiles).map(([name, profile]) => [
            name,
            {
              ...profile,
              env: Object.fromEntries(
                Object.entries(profile.env).map(([key, value]) => [
                  key,
                  SECRET_ENV_KEY.test(key) ? secret(value) : value,
                ]),
              ),
            },
          ]),
        ),
      };
    case 'ollama':
      return { ...instance, base_url: redactUrl(instance.base_url) };
    case 'openai_compat':
      return {
        ...instance,
        base_url: redactUrl(instance.base_url),
        headers: Object.fromEntries(
          Object.keys(instance.headers).map((key) => [key, secret(instance.headers[key] ?? '')]),
        ),
      };
  }
}

function secret(value: string): string {
  return value === '' ? '' : REDACTED;
}

/** Hides the userinfo password of a URL (`http://user:pw@host` → `http://user:[redacted]@host`). */
function redactUrl(value: string): string {
  if (value === '') return value;
  try {
    const url = new URL(value);
    if (url.password === '') return value;
    url.password = PLACEHOLDER;
    return url.toString().replace(PLACEHOLDER, REDACTED);
  } catch {
    return value;
  }
}

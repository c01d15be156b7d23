// Structural validation of the raw document with ajv (all errors, not just the first), translated into
// ConfigIssues with YAML paths, lines and wording an operator can act on.
import type { ErrorObject, ValidateFunction } from 'ajv';
import { createAjv } from './create-ajv.js';
import { formatPath, pointerToSegments, type PathSegment } from './config-path.js';
import { isHostAuthority } from './host-authority.js';
import { isListenAddress } from './listen-address.js';
import { edgeConfigSchema, IDENTIFIER_PATTERN } from './schema.js';
import type { ConfigIssue } from './types.js';
import type { YamlSource } from './yaml-source.js';

// Compiled lazily once per process: compiling the schema costs a few hundred milliseconds, validating is cheap.
let compiled: ValidateFunction | undefined;

function validator(): ValidateFunction {
  if (!compiled) {
    const ajv = createAjv({
      allErrors: true,
      strict: true,
      discriminator: true,
      verbose: true,
      allowUnionTypes: true,
    });
    ajv.addFormat('listen-address', { type: 'string', validate: isListenAddress });
    // Several edges of one cluster: `a:19090,b:19090` (a single address is a list of one).
    ajv.addFormat('listen-address-list', {
      type: 'string',
      validate: (value: string) => {
        const addresses = value.split(',');
        return addresses.length <= 16 && addresses.every((address) => isListenAddress(address));
      },
    });
    ajv.addFormat('host-authority', { type: 'string', validate: isHostAuthority });
    ajv.addFormat('http-url', { type: 'string', validate: isHttpUrl });
    ajv.addFormat('optional-http-url', {
      type: 'string',
      validate: (value: string) => value === '' || isHttpUrl(value),
    });
    compiled = ajv.compile(edgeConfigSchema);
  }
  return compiled;
}

export function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

export function validateStructure(source: YamlSource): ConfigIssue[] {
  const validate = validator();
  if (validate(source.data)) return [];
  const issues: ConfigIssue[] = [];
  const seen = new Set<string>();
  for (const error of validate.errors ?? []) {
    const issue = toIssue(error, source);
    if (!issue) continue;
    const key = `${issue.path}\u0000${issue.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push(issue);
  }
  return issues;
}

function toIssue(error: ErrorObject, source: YamlSource): ConfigIssue | undefined {
  // propertyNames reports the failing name itself; its nested keyword error would repeat it.
  if (error.schemaPath.includes('/propertyNames/')) return undefined;
  const base = pointerToSegments(error.instancePath, source.data);
  const params = error.params as Record<string, unknown>;
  const at = (segments: PathSegment[], code: string, message: string, key = false): ConfigIssue => ({
    path: formatPath(segments),
    line: source.lineOf(segments, { key }),
    code,
    message,
  });
  const parentSchema = (error.parentSchema ?? {}) as Record<string, unknown>;
  switch (error.keyword) {
    case 'if':
      // The failing branch (then/else) reports the actual problem.
      return undefined;
    case 'required':
      return at([...base, String(params.missingProperty)], 'required', 'is required');
    case 'additionalProperties': {
      const name = String(params.additionalProperty);
      return at([...base, name], 'unknown_key', `unknown key '${name}'`, true);
    }
    case 'propertyNames': {
      const name = String(params.propertyName);
      return at(
        [...base, name],
        'format',
        `key '${name}' ${describePattern(parentSchema.propertyNames)}`,
        true,
      );
    }
    case 'type':
      return at(
        base,
        'type',
        `must be ${describeType(String(params.type))}, not ${describeValue(error.data)}`,
      );
    case 'enum':
      return at(
        base,
        'enum',
        `must be one of: ${(params.allowedValues as unknown[]).map(String).join(', ')}`,
      );
    case 'discriminator':
      return params.error === 'mapping'
        ? at([...base, 'type'], 'enum', 'must be one of: cli, ollama, openai_compat')
        : at([...base, 'type'], 'required', 'is required and must be a string');
    case 'minimum':
      if (parentSchema.minimum === 0) {
        return at(base, 'range', `must not be negative (allowed 0 to ${String(parentSchema.maximum)})`);
      }
      return at(
        base,
        'range',
        `must be between ${String(parentSchema.minimum)} and ${String(parentSchema.maximum)}`,
      );
    case 'maximum':
      return at(
        base,
        'range',
        `must be between ${String(parentSchema.minimum)} and ${String(parentSchema.maximum)}`,
      );
    case 'minLength':
      return at(base, 'required', 'must not be empty');
    case 'maxLength':
      return at(base, 'range', `must be at most ${String(params.limit)} characters`);
    case 'maxItems':
      return at(base, 'range', `must have at most ${String(params.limit)} items`);
    case 'uniqueItems':
      return at(
        base,
        'duplicate',
        `has duplicate items (positions ${String(params.j)} and ${String(params.i)})`,
      );
    case 'pattern':
      return at(base, 'format', describePattern(parentSchema));
    case 'format':
      return at(base, 'format', describeFormat(String(params.format)));
    default:
      return at(base, 'invalid', error.message ?? 'is invalid');
  }
}

function describePattern(schema: unknown): string {
  const pattern =
    typeof schema === 'object' && schema !== null ? (schema as { pattern?: unknown }).pattern : '';
  if (pattern === IDENTIFIER_PATTERN) {
    return "must be an identifier: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit";
  }
  if (pattern === '^([0-9A-Fa-f]{64})?$') return 'must be a 64-character hex SHA-256 digest';
  if (typeof pattern === 'string' && pattern.startsWith('^/')) return "must be a URL path starting with '/'";
  return `must match ${String(pattern)}`;
}

function describeFormat(format: string): string {
  switch (format) {
    case 'listen-address':
      return 'must be host:port with a port from 0 to 65535';
    case 'listen-address-list':
      return 'must be host:port, or up to 16 of them separated by commas (the edges of a cluster)';
    case 'host-authority':
      return 'must be a host name or address, optionally with :port (IPv6 in brackets)';
    case 'http-url':
      return 'must be an http:// or https:// URL';
    case 'optional-http-url':
      return "must be an http:// or https:// URL or ''";
    default:
      return `must be a valid ${format}`;
  }
}

function describeType(type: string): string {
  switch (type) {
    case 'object':
      return 'a mapping';
    case 'array':
      return 'a list';
    case 'integer,null':
      return 'an integer or null';
    default:
      return `a${/^[aeiou]/.test(type) ? 'n' : ''} ${type}`;
  }
}

/** The kind of value found, never the value itself: a mistyped token must not be echoed. */
function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a fractional number';
  return `a ${typeof value}`;
}

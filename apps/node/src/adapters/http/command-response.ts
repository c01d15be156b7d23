// NodeCommandResponse builders shared by the HTTP adapters, so every command answers in the same shape:
// ok + a readable `result` map (+ `lifecycle` for model lifecycle commands), or ok=false with a message.
import { create, type NodeCommandResponse, type ProviderLifecycleResult } from '@iop/wire';

import { UpstreamCancelled, UpstreamError } from './upstream-error.js';

export function commandOk(
  result: Record<string, string>,
  lifecycle?: ProviderLifecycleResult,
): NodeCommandResponse {
  return create.nodeCommandResponse({ ok: true, result, ...(lifecycle ? { lifecycle } : {}) });
}

export function commandFailed(error: unknown, lifecycle?: ProviderLifecycleResult): NodeCommandResponse {
  if (error instanceof UpstreamError) {
    return create.nodeCommandResponse({
      ok: false,
      error: `${error.code}: ${error.message}`,
      result: { code: error.code },
      ...(lifecycle ? { lifecycle } : {}),
    });
  }
  if (error instanceof UpstreamCancelled) {
    return create.nodeCommandResponse({ ok: false, error: error.message, result: { code: 'cancelled' } });
  }
  return create.nodeCommandResponse({
    ok: false,
    error: error instanceof Error ? error.message : String(error),
    result: { code: 'internal' },
  });
}

export function commandUnsupported(command: string, adapterType: string): NodeCommandResponse {
  return create.nodeCommandResponse({
    ok: false,
    error: `command ${command} not supported by adapter ${adapterType}`,
    result: { code: 'unsupported_command' },
  });
}

export function commandInvalid(message: string): NodeCommandResponse {
  return create.nodeCommandResponse({ ok: false, error: message, result: { code: 'invalid_args' } });
}

/** base_url for display: credentials in the URL are never shown. */
export function displayUrl(baseUrl: string): string {
  try {
    const url = new URL(baseUrl);
    url.username = '';
    url.password = '';
    return url.toString().replace(/\/$/, '');
  } catch {
    return baseUrl;
  }
}

export interface CommandContext {
  logger: { warn(fields: Record<string, unknown>, message: string): void };
  adapterName: string;
  adapterType: string;
  command: string;
}

/** Logs a failed command (never its arguments: they may carry credentials) and answers ok=false. */
export function commandFailedLogged(context: CommandContext, error: unknown): NodeCommandResponse {
  context.logger.warn(
    {
      adapter: context.adapterName,
      command: context.command,
      error: error instanceof Error ? error.message : String(error),
    },
    `${context.adapterType} command failed`,
  );
  return commandFailed(error);
}

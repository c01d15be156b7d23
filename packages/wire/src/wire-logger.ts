// The logging surface @iop/wire needs. Structurally a subset of the apps' Logger (pino-style: fields, message),
// so apps pass their own logger without an adapter.

export interface WireLogger {
  debug(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export const silentWireLogger: WireLogger = {
  debug: () => undefined,
  warn: () => undefined,
};

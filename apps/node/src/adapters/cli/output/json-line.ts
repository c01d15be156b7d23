// Helpers for NDJSON output: parse one line into a plain object, and read typed fields without casting blindly.
export type JsonObject = Record<string, unknown>;

export function parseJsonLine(line: string): JsonObject | undefined {
  const trimmed = line.trim();
  if (!trimmed.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(trimmed);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function stringField(object: unknown, key: string): string | undefined {
  if (!isObject(object)) return undefined;
  const value = object[key];
  return typeof value === 'string' ? value : undefined;
}

export function numberField(object: unknown, key: string): number | undefined {
  if (!isObject(object)) return undefined;
  const value = object[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

export function objectField(object: unknown, key: string): JsonObject | undefined {
  if (!isObject(object)) return undefined;
  const value = object[key];
  return isObject(value) ? value : undefined;
}

export function arrayField(object: unknown, key: string): unknown[] {
  if (!isObject(object)) return [];
  const value = object[key];
  return Array.isArray(value) ? value : [];
}

/** A non-JSON line in a JSON mode is surfaced as a log progress part rather than lost. */
export function logPart(line: string): {
  type: 'progress';
  kind: string;
  message: string;
  fields: Record<string, string>;
} {
  return { type: 'progress', kind: 'log', message: line, fields: {} };
}

export function toolPart(message: string, fields: Record<string, string>) {
  return { type: 'progress' as const, kind: 'tool', message, fields };
}

/** Clamps to the uint32 fields of the wire Usage. */
export function tokens(value: number | undefined): number {
  if (value === undefined || value < 0) return 0;
  return Math.min(Math.round(value), 0xffffffff);
}

// An error's message for a log line (anything thrown, Error or not).
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

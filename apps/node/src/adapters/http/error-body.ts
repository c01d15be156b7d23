// Extracts the human message from an upstream error body. Servers disagree on the shape: Ollama sends
// {"error":"..."}, OpenAI and vLLM {"error":{"message":...}}, older vLLM {"object":"error","message":...},
// FastAPI {"detail":...}; anything else is shown as (trimmed) text.
const MAX_TEXT = 500;

function messageOf(value: unknown): string | undefined {
  if (typeof value === 'string' && value.trim() !== '') return value;
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Record<string, unknown>;
  return messageOf(record.error) ?? messageOf(record.message) ?? messageOf(record.detail);
}

export function errorMessageFromBody(text: string, fallback: string): string {
  const trimmed = text.trim();
  if (trimmed === '') return fallback;
  try {
    const message = messageOf(JSON.parse(trimmed) as unknown);
    if (message !== undefined) return message;
  } catch {
    // Not JSON: fall through to the text itself.
  }
  return trimmed.length > MAX_TEXT ? `${trimmed.slice(0, MAX_TEXT)}…` : trimmed;
}

/** The message of a parsed stream event that reports an error (`{"error": ...}`), if it is one. */
export function errorMessageFromEvent(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || !('error' in value)) return undefined;
  const error = value.error;
  if (error === null || error === undefined) return undefined;
  return messageOf(error) ?? JSON.stringify(error);
}

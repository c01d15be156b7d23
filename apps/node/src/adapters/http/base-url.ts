// Joins configured base URLs with API paths. Operators write base_url with or without a trailing slash, and for
// OpenAI-compatible servers with or without the `/v1` suffix (the OpenAI SDK convention includes it).
export function trimBaseUrl(baseUrl: string): string {
  return baseUrl.trim().replace(/\/+$/, '');
}

export function joinUrl(baseUrl: string, path: string): string {
  return `${trimBaseUrl(baseUrl)}/${path.replace(/^\/+/, '')}`;
}

/** `http://host:8000` and `http://host:8000/v1` both become `http://host:8000/v1`. */
export function openAIApiBase(baseUrl: string): string {
  const trimmed = trimBaseUrl(baseUrl);
  return /\/v1$/.test(trimmed) ? trimmed : `${trimmed}/v1`;
}

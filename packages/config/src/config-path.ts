// Issue paths: the dotted/indexed form operators read (`nodes[0].adapters.cli.profiles.codex.command`),
// built from segment arrays and from ajv's JSON pointers.

export type PathSegment = string | number;

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;

export function formatPath(segments: readonly PathSegment[]): string {
  let out = '';
  for (const segment of segments) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (PLAIN_KEY.test(segment)) out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}

/** Splits a JSON pointer into segments; array indexes become numbers when the data there is an array. */
export function pointerToSegments(pointer: string, data: unknown): PathSegment[] {
  if (pointer === '') return [];
  const segments: PathSegment[] = [];
  let current: unknown = data;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(current)) {
      const index = Number(key);
      segments.push(index);
      current = current[index];
    } else {
      segments.push(key);
      current = isRecord(current) ? current[key] : undefined;
    }
  }
  return segments;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An issue located by path segments; load-config turns it into a ConfigIssue with a line number. */
export interface PendingIssue {
  readonly segments: readonly PathSegment[];
  readonly code: string;
  readonly message: string;
  /** Point the line at the key rather than the value. */
  readonly key?: boolean;
}

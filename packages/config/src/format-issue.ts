// Renders a ConfigIssue as the one-line form operators see: `nodes[0].providers[1].adapter (line 42): message`.
import type { ConfigIssue } from './types.js';

export function formatIssue(issue: ConfigIssue): string {
  const where = issue.path === '' ? '(document)' : issue.path;
  const line = issue.line === undefined ? '' : ` (line ${issue.line})`;
  return `${where}${line}: ${issue.message}`;
}

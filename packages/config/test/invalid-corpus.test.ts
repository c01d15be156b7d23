// Every file under fixtures/invalid is an edge.yaml that must be rejected. Its `# expect: <path>` header lines
// list exactly the issue paths the loader must report (`(document)` for document-level issues), so a rule that
// stops firing, or starts firing spuriously, fails here.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { formatIssue, parseConfigText } from '../src/index.js';

const dir = path.join(import.meta.dirname, 'fixtures', 'invalid');
const fixtures = readdirSync(dir)
  .filter((name) => name.endsWith('.yaml'))
  .sort()
  .map((name) => {
    const text = readFileSync(path.join(dir, name), 'utf8');
    const expected = [...text.matchAll(/^# expect: (.+)$/gm)].map((match) => match[1].trim());
    return { name, text, expected };
  });

describe('invalid config corpus', () => {
  it('holds at least 50 fixtures, each declaring its expected issue paths', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(50);
    for (const fixture of fixtures)
      expect({ name: fixture.name, expected: fixture.expected.length > 0 }).toEqual({
        name: fixture.name,
        expected: true,
      });
  });

  it.each(fixtures)('$name is rejected with exactly its expected paths', ({ text, expected }) => {
    const result = parseConfigText(text, 'fixture.yaml');
    if (result.ok) throw new Error('accepted an invalid config');
    const found = [...new Set(result.issues.map((issue) => (issue.path === '' ? '(document)' : issue.path)))];
    expect({ found: found.sort(), issues: result.issues.map(formatIssue) }).toEqual({
      found: [...expected].sort(),
      issues: expect.any(Array) as unknown,
    });
    for (const issue of result.issues) {
      expect(issue.message.length).toBeGreaterThan(0);
      expect(issue.line).toBeGreaterThanOrEqual(1);
    }
  });
});

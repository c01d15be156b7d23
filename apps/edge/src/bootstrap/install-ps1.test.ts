import { describe, expect, it } from '@jest/globals';
import { renderInstallPs1 } from './install-scripts.js';
import { psQuote, shQuote } from './shell-quote.js';

const fingerprint = `sha256:${'cd'.repeat(32)}`;
const values = {
  version: '0.1.0',
  artifactUrl: 'http://192.0.2.10:19091/artifacts',
  edgeAddress: '192.0.2.10:19090',
  edgeFingerprint: fingerprint,
  artifacts: [
    { file: 'iop-node-0.1.0-windows-amd64.tar.gz', sha256: '1'.repeat(64) },
    { file: 'iop-node-0.1.0-windows-arm64.tar.gz', sha256: '2'.repeat(64) },
  ],
};

/** The value of `$Name = '...'` in the rendered script, with PowerShell's '' un-doubled. */
function assigned(script: string, name: string): string | undefined {
  const match = new RegExp(`^\\$${name} = '((?:[^']|'')*)'\\r$`, 'm').exec(script);
  return match?.[1]?.replace(/''/g, "'");
}

describe('install.ps1 rendering', () => {
  it('fills every placeholder, uses CRLF and defines Start-IopNode without running anything', () => {
    const script = renderInstallPs1(values);
    expect(script).not.toMatch(/__IOP_/);
    expect(script.split('\r\n').length).toBeGreaterThan(50);
    expect(script.replace(/\r\n/g, '')).not.toContain('\n');
    expect(script).toContain('function Start-IopNode {');
    expect(assigned(script, 'IopVersion')).toBe('0.1.0');
    expect(assigned(script, 'IopDefaultArtifactUrl')).toBe(values.artifactUrl);
    expect(assigned(script, 'IopDefaultEdge')).toBe(values.edgeAddress);
    expect(assigned(script, 'IopDefaultEdgeFingerprint')).toBe(fingerprint);
    // The artifacts' SHA-256 travel inside the script (pinned by the one-liner), not in a separate download.
    expect(script).toContain(
      `$IopArtifactSha256s = '\r\n  ${'1'.repeat(64)}  iop-node-0.1.0-windows-amd64.tar.gz\r\n  ${'2'.repeat(64)}  iop-node-0.1.0-windows-arm64.tar.gz'`,
    );
    expect(script).not.toContain('SHA256SUMS');
    expect(script).toContain(
      "if ($EdgeFingerprint) { $arguments += @('--edge-fingerprint', $EdgeFingerprint) }",
    );
    // Only function definitions and assignments at the top level: loading it starts nothing.
    const topLevel = script
      .split('\r\n')
      .filter((line) => /^\S/.test(line) && !line.startsWith('#') && !line.startsWith('}'));
    expect(topLevel.every((line) => /^(\$\w+ = |function )/.test(line))).toBe(true);
  });

  it.each([
    ['quotes and spaces', "http://edge.example:19091/it's a \u2019test\u2019"],
    ['dollar and backticks', 'http://edge.example:19091/$env:USERNAME/`whoami`/$(Get-Date)'],
  ])('keeps an artifact URL with %s verbatim in a single-quoted literal', (_label, artifactUrl) => {
    const script = renderInstallPs1({ ...values, artifactUrl });
    const line = script.split('\r\n').find((candidate) => candidate.startsWith('$IopDefaultArtifactUrl = '));
    expect(line).toBe(`$IopDefaultArtifactUrl = ${psQuote(artifactUrl)}`);
    expect(assigned(script, 'IopDefaultArtifactUrl')?.replace(/\u2019\u2019/g, '\u2019')).toBe(artifactUrl);
  });
});

describe('quoting', () => {
  it('single-quotes for sh and PowerShell and refuses control characters', () => {
    expect(shQuote("it's $HOME `x`")).toBe(`'it'\\''s $HOME \`x\`'`);
    expect(psQuote("it's $env:X `n")).toBe("'it''s $env:X `n'");
    expect(psQuote('a\u2019b')).toBe("'a\u2019\u2019b'");
    expect(() => shQuote('a\nb', 'token')).toThrow('token contains a control character');
    expect(() => psQuote('a\rb')).toThrow(expect.objectContaining({ code: 'invalid_value' }));
  });
});

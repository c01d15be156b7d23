// Renders install.sh and install.ps1 for one edge: the artifact version, where artifacts are served, the edge's
// node-transport address and key fingerprint become the scripts' defaults (the one-liner passes them too), and
// the SHA-256 of every artifact is written into the script, so pinning the script's own hash (the one-liner
// does) pins the artifacts as well. Values are validated and quoted; the templates never interpolate anything else.
import { BootstrapError } from './errors.js';
import { INSTALL_PS1_TEMPLATE } from './install-ps1-template.js';
import { INSTALL_SH_TEMPLATE } from './install-sh-template.js';
import { psQuote, shQuote } from './shell-quote.js';

export interface InstallScriptValues {
  /** Version in the artifact file names (iop-node-<version>-<os>-<arch>.tar.gz). */
  version: string;
  /** Base URL of the artifacts and SHA256SUMS, e.g. http://192.0.2.10:19091/artifacts. */
  artifactUrl: string;
  /** host:port nodes dial. */
  edgeAddress: string;
  /** `sha256:<hex>` of the edge's TLS key; '' when the edge runs without TLS. */
  edgeFingerprint: string;
  /** The artifacts the script may install, with their SHA-256 (from the artifact set). */
  artifacts: readonly { file: string; sha256: string }[];
}

const VERSION_PATTERN = /^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$/;

export function validateInstallValues(values: InstallScriptValues): void {
  if (!VERSION_PATTERN.test(values.version)) {
    throw new BootstrapError('invalid_value', `invalid artifact version '${values.version}'`);
  }
  let url: URL;
  try {
    url = new URL(values.artifactUrl);
  } catch {
    throw new BootstrapError('invalid_value', `artifact URL is not a URL: ${values.artifactUrl}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new BootstrapError('invalid_value', `artifact URL must be http(s): ${values.artifactUrl}`);
  }
  if (!/^(\[[0-9A-Fa-f:.]+\]|[^\s:/[\]]+):\d{1,5}$/.test(values.edgeAddress)) {
    throw new BootstrapError('invalid_value', `edge address must be host:port: ${values.edgeAddress}`);
  }
  if (values.edgeFingerprint !== '' && !/^sha256:[0-9a-f]{64}$/.test(values.edgeFingerprint)) {
    throw new BootstrapError(
      'invalid_value',
      `edge fingerprint must be sha256:<hex>: ${values.edgeFingerprint}`,
    );
  }
  for (const artifact of values.artifacts) {
    if (!/^[0-9a-f]{64}$/.test(artifact.sha256) || !/^[0-9A-Za-z][0-9A-Za-z.+_-]*$/.test(artifact.file)) {
      throw new BootstrapError('invalid_value', `invalid artifact checksum entry for '${artifact.file}'`);
    }
  }
}

/**
 * Indented `<sha256>  <file>` lines, one per artifact, each after a newline: safe inside single quotes in sh and
 * PowerShell (validated above), and indented so only assignments and functions start a line at the top level.
 */
function checksumLines(values: InstallScriptValues): string {
  return values.artifacts.map((artifact) => `\n  ${artifact.sha256}  ${artifact.file}`).join('');
}

function fill(template: string, values: InstallScriptValues, quote: (value: string) => string): string {
  validateInstallValues(values);
  // Function replacements: `$` in a value must not be read as a replacement pattern.
  return template
    .replace(/__IOP_VERSION_TEXT__/g, () => values.version)
    .replace(/__IOP_VERSION__/g, () => quote(values.version))
    .replace(/__IOP_ARTIFACT_URL__/g, () => quote(values.artifactUrl))
    .replace(/__IOP_EDGE_FINGERPRINT__/g, () => quote(values.edgeFingerprint))
    .replace(/__IOP_ARTIFACT_SHA256S__/g, () => `'${checksumLines(values)}'`)
    .replace(/__IOP_EDGE__/g, () => quote(values.edgeAddress));
}

export function renderInstallSh(values: InstallScriptValues): string {
  return fill(INSTALL_SH_TEMPLATE, values, (value) => shQuote(value));
}

export function renderInstallPs1(values: InstallScriptValues): string {
  // CRLF: Windows PowerShell 5.1 reads either, but Notepad and editors on Windows show CRLF correctly.
  return fill(INSTALL_PS1_TEMPLATE, values, (value) => psQuote(value)).replace(/\r?\n/g, '\r\n');
}

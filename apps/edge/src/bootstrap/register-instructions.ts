// The bootstrap part of `iop-edge node register`'s output: complete, ready-to-paste install lines for Linux/macOS
// and Windows with this edge's real URLs and the node's token (printed once, like the token itself).
import type { EdgeConfig } from '@iop/config';
import {
  bootstrapPublicUrl,
  unixInstallCommand,
  windowsInstallCommand,
  type NetworkInterfaces,
} from './bootstrap-urls.js';

export interface InstallLines {
  publicUrl: string;
  unix: string;
  windows: string;
}

export function installLines(
  config: EdgeConfig,
  values: { nodeId: string; token: string; edgeAddress: string },
  interfaces: NetworkInterfaces,
): InstallLines {
  const publicUrl = bootstrapPublicUrl(config, interfaces);
  const input = { publicUrl, ...values };
  return { publicUrl, unix: unixInstallCommand(input), windows: windowsInstallCommand(input) };
}

/** Lines for the terminal (no trailing newlines). */
export function formatInstallInstructions(lines: InstallLines): string[] {
  return [
    `Install and start the node on its host (served by this edge's bootstrap server, ${lines.publicUrl}):`,
    '  Linux / macOS (bash):',
    `    ${lines.unix}`,
    '  Windows (paste into PowerShell):',
    `    ${lines.windows}`,
    'Add --service (Linux/macOS) or -Service (Windows) to install it as a service instead of running it here.',
    'These lines contain the token: paste them only on the node host, do not store them in shared files.',
  ];
}

import { EDGE_VERSION } from '../version.js';
import { writeLine, type CliCommand } from './command.js';

export const versionCommand: CliCommand = {
  path: ['version'],
  summary: 'Print the edge version.',
  usage: 'version',
  run(_argv, io) {
    writeLine(
      io.stdout,
      `iop-edge ${EDGE_VERSION} (node ${process.versions.node}, ${process.platform}/${process.arch})`,
    );
    return Promise.resolve(0);
  },
};

// `iop-edge cluster keygen --out FILE`: writes a new fabric key (32 random bytes, base64, one line) to FILE with
// mode 0600, and never overwrites an existing file. Every edge of a fabric names a copy of it in
// cluster.fabric_key_file. To rotate: add the new key as a second line of every edge's file, then move it first,
// then remove the old line (cluster/fabric-keyring.ts), one edge at a time.
import path from 'node:path';
import { FabricKeyError, writeFabricKeyFile } from '../cluster/fabric-keyring.js';
import { parseFlags, stringFlag, UsageError, writeLine, type CliCommand } from './command.js';

export const clusterKeygenCommand: CliCommand = {
  path: ['cluster', 'keygen'],
  summary: 'Write a new fabric key (mode 0600) for cluster.fabric_key_file; never overwrites a file.',
  usage: 'cluster keygen --out FILE',
  // async: a usage error rejects like every other command's.
  // eslint-disable-next-line @typescript-eslint/require-await
  async run(argv, io) {
    const flags = parseFlags(argv, { out: { type: 'string' } });
    if (flags.positionals.length > 0)
      throw new UsageError(`unexpected arguments: ${flags.positionals.join(' ')}`);
    const out = stringFlag(flags, 'out');
    if (out === undefined || out === '') throw new UsageError('--out FILE is required');
    const file = path.resolve(io.cwd, out);
    try {
      writeFabricKeyFile(file);
    } catch (error) {
      if (!(error instanceof FabricKeyError)) throw error;
      writeLine(io.stderr, error.message);
      return 1;
    }
    writeLine(
      io.stdout,
      `wrote a fabric key to ${file} (mode 0600); copy it to every edge of the fabric and set`,
    );
    writeLine(io.stdout, `cluster.fabric_key_file: ${file}`);
    return 0;
  },
};

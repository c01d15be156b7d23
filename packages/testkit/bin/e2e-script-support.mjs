// What the e2e smoke scripts of this folder share: their `--name value` arguments and a free loopback port.
import { createServer } from 'node:net';

/** The value after `--name` in this process's arguments; throws when it is missing. */
export function option(name) {
  const argv = process.argv.slice(2);
  const index = argv.indexOf(name);
  if (index < 0 || !argv[index + 1]) throw new Error(`missing ${name}`);
  return argv[index + 1];
}

/** A loopback port free a moment ago (closed again at once; for a process that binds it right after). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

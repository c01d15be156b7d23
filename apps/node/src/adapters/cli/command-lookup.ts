// Checks before spawning that a profile's command can be run, so a missing CLI is a clear `command_not_found`
// error instead of a late spawn failure (and works the same for pty launches, which fail less legibly).
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';

/** The executable path `command` resolves to with this PATH, or undefined. */
export function findExecutable(command: string, searchPath: string | undefined): string | undefined {
  if (command.includes('/') || command.includes('\\')) return isExecutable(command) ? command : undefined;
  const extensions = process.platform === 'win32' ? ['', '.exe', '.cmd', '.bat'] : [''];
  for (const directory of (searchPath ?? '').split(path.delimiter)) {
    if (!directory) continue;
    for (const extension of extensions) {
      const candidate = path.join(directory, command + extension);
      if (isExecutable(candidate)) return candidate;
    }
  }
  return undefined;
}

function isExecutable(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

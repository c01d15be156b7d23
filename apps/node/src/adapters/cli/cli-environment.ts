// The environment a CLI process gets: a minimal allow-list inherited from the node agent, with the profile's
// `env` merged over it. Nothing else leaks through (no tokens of the agent itself); values are never logged.
const INHERITED_KEYS = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'LANG',
  'LANGUAGE',
  'LC_ALL',
  'LC_CTYPE',
  'LC_MESSAGES',
  'TMPDIR',
  'TEMP',
  'TMP',
  'SHELL',
  'TERM',
  'TZ',
  'COLORTERM',
  'XDG_RUNTIME_DIR',
  // Windows essentials.
  'SystemRoot',
  'SYSTEMROOT',
  'ComSpec',
  'COMSPEC',
  'PATHEXT',
  'USERPROFILE',
  'APPDATA',
  'LOCALAPPDATA',
  'ProgramData',
];

export function buildCliEnvironment(
  inherited: Readonly<Record<string, string | undefined>>,
  profileEnv: Readonly<Record<string, string>>,
  overrides: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const key of INHERITED_KEYS) {
    const value = inherited[key];
    if (value !== undefined) environment[key] = value;
  }
  return { ...environment, ...profileEnv, ...overrides };
}

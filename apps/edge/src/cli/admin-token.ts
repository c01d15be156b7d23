// The admin token `config init` and `setup` write into a new edge.yaml (refresh.admin_token): 256 random bits,
// base64url, behind a recognizable prefix so a leaked one is easy to grep for. The admin API and the dashboard
// then refuse every caller without it, on loopback too; the CLI commands read it back from the same file.
import { randomBytes } from 'node:crypto';

export const ADMIN_TOKEN_PREFIX = 'iop-admin-';

export function generateAdminToken(random: (size: number) => Buffer = randomBytes): string {
  return `${ADMIN_TOKEN_PREFIX}${random(32).toString('base64url')}`;
}

// The systemd unit `iop-edge setup` writes: the edge runs as the `iop` user on a read-only system with only its
// data directory writable, no privilege gain and the kernel, namespaces and address families locked down.
import type { SetupPaths } from './setup-safety.js';

export const SERVICE_NAME = 'iop-edge';
export const SERVICE_USER = 'iop';
export const UNIT_PATH = `/etc/systemd/system/${SERVICE_NAME}.service`;

/** Unit file: runs as iop, read-only system, writable data dir only, no privilege gain. */
export function renderEdgeUnit(options: SetupPaths): string {
  const quote = (value: string) =>
    `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/%/g, '%%')}"`;
  return `[Unit]
Description=IOP edge (node transport, bootstrap server, APIs)
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
User=${SERVICE_USER}
Group=${SERVICE_USER}
ExecStart=${quote(options.binary)} serve --config ${quote(options.configPath)}
Restart=on-failure
RestartSec=5
TimeoutStopSec=30
UMask=0027
LimitNOFILE=65536
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ReadWritePaths=${quote(options.dataDir)}
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictSUIDSGID=yes
RestrictNamespaces=yes
RestrictRealtime=yes
LockPersonality=yes
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX
CapabilityBoundingSet=
AmbientCapabilities=
SystemCallArchitectures=native
# Node's JIT needs writable+executable memory, so MemoryDenyWriteExecute stays off.

[Install]
WantedBy=multi-user.target
`;
}

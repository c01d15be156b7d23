// The node installer for Linux and macOS (bash), with placeholders __IOP_VERSION__, __IOP_ARTIFACT_URL__,
// __IOP_EDGE__, __IOP_EDGE_FINGERPRINT__ (shell-quoted values), __IOP_ARTIFACT_SHA256S__ (the artifacts' SHA-256
// lines, validated) and __IOP_VERSION_TEXT__ filled by renderInstallSh. Kept as a string so the single-file edge
// executable carries it; tests run its functions with a fake uname.
export const INSTALL_SH_TEMPLATE = `#!/usr/bin/env bash
# IOP node installer, rendered by iop-edge __IOP_VERSION_TEXT__ for this edge. Usage (the line \`iop-edge node register\`
# prints; it checks this file's SHA-256 before running it, and the token travels in the IOP_TOKEN environment
# variable, never in arguments):
#   f=... && curl -fsSL <public-url>/install.sh -o "$f" && <sha256 of "$f" is the pinned one> &&
#     IOP_TOKEN=... bash "$f" --node-id ID [--edge HOST:PORT] [--edge-fingerprint sha256:HEX]
#        [--artifact-url URL] [--service] [--no-start]
# It detects the OS and architecture, downloads the matching node artifact from the edge, verifies it against
# the SHA-256 written into this script (so the line's pin covers the artifact too), installs it under ~/.iop
# (/opt/iop as root; IOP_HOME overrides), stores the token in a file only the node's user can read, and starts
# the node in the foreground pinned to the edge's key (--service: a systemd unit or a launchd agent instead; as
# root on Linux the unit runs the node as root limited to CAP_SETUID CAP_SETGID CAP_KILL CAP_DAC_READ_SEARCH, and
# its CLI agents as the unprivileged iop-agent user in <root>/workspaces, so they cannot read the node's token,
# identity key or history). Everything is in functions and runs only from
# the last line, so a truncated download does nothing.
set -euo pipefail

IOP_VERSION=__IOP_VERSION__
IOP_DEFAULT_ARTIFACT_URL=__IOP_ARTIFACT_URL__
IOP_DEFAULT_EDGE=__IOP_EDGE__
# sha256:<hex> of the edge's TLS key; '' = the edge runs without TLS (plaintext, not authenticated).
IOP_DEFAULT_EDGE_FINGERPRINT=__IOP_EDGE_FINGERPRINT__
# '<sha256>  <artifact file>' per line: the only artifacts this script installs.
IOP_ARTIFACT_SHA256S=__IOP_ARTIFACT_SHA256S__
# The unprivileged user CLI agents of a root service install run as (no login shell, a home of its own).
IOP_AGENT_USER=iop-agent
IOP_SERVICE_NAME=iop-node
IOP_LAUNCHD_LABEL=dev.iop.node

iop_say() { printf 'iop-install: %s\\n' "$*" >&2; }
iop_die() {
  printf 'iop-install: error: %s\\n' "$*" >&2
  exit 1
}

# linux | darwin; anything else is refused with the reason.
iop_detect_os() {
  local name
  name="$(uname -s)"
  case "$name" in
    Linux) echo linux ;;
    Darwin) echo darwin ;;
    MINGW* | MSYS* | CYGWIN* | Windows_NT)
      iop_die "this is Windows ($name): use the PowerShell line (install.ps1 and Start-IopNode) instead"
      ;;
    *) iop_die "unsupported operating system '$name': IOP nodes run on Linux, macOS and Windows" ;;
  esac
}

# amd64 | arm64 (uname -m spellings of both).
iop_detect_arch() {
  local machine
  machine="$(uname -m)"
  case "$machine" in
    x86_64 | amd64 | x64) echo amd64 ;;
    aarch64 | arm64 | armv8*) echo arm64 ;;
    *) iop_die "unsupported CPU architecture '$machine': IOP node artifacts exist for amd64 and arm64" ;;
  esac
}

iop_artifact_name() {
  printf 'iop-node-%s-%s-%s.tar.gz\\n' "$IOP_VERSION" "$1" "$2"
}

# SHA-256 of a file with whichever tool the host has.
iop_sha256() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | awk '{print $1}'
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | awk '{print $1}'
  elif command -v openssl >/dev/null 2>&1; then
    openssl dgst -sha256 "$1" | awk '{print $NF}'
  else
    iop_die "no SHA-256 tool found (sha256sum, shasum or openssl)"
  fi
}

# The checksum this script carries for artifact file name $1, or nothing.
iop_expected_sha256() {
  printf '%s\\n' "$IOP_ARTIFACT_SHA256S" | awk -v name="$1" '$2 == name || $2 == ("*" name) { print $1; exit }'
}

# Fails unless file $1 has the SHA-256 this script carries for artifact name $2.
iop_verify() {
  local expected actual
  expected="$(iop_expected_sha256 "$2")"
  [ -n "$expected" ] || iop_die "$2 is not among this edge's artifacts: the edge has no node for this platform"
  actual="$(iop_sha256 "$1")"
  if [ "$actual" != "$expected" ]; then
    iop_die "checksum mismatch for $2: expected $expected, got $actual (download corrupted or tampered with); nothing was installed"
  fi
}

iop_download() {
  local url="$1" dest="$2" status=0
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 3 --connect-timeout 15 -o "$dest" "$url" || status=$?
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$dest" "$url" || status=$?
  else
    iop_die "neither curl nor wget is installed"
  fi
  [ "$status" -eq 0 ] || iop_die "download failed: $url (exit $status)"
}

# /opt/iop for root, ~/.iop otherwise; IOP_HOME wins.
iop_install_root() {
  if [ -n "\${IOP_HOME:-}" ]; then
    echo "$IOP_HOME"
  elif [ "$(id -u)" = 0 ]; then
    echo /opt/iop
  else
    [ -n "\${HOME:-}" ] || iop_die "HOME is not set"
    echo "$HOME/.iop"
  fi
}

# Writes the token to $1, readable by the owner only (created under umask 077, then renamed into place).
iop_write_token() {
  local file="$1" token="$2"
  (
    umask 077
    printf '%s\\n' "$token" >"$file.tmp"
  )
  chmod 600 "$file.tmp"
  mv -f "$file.tmp" "$file"
}

# One ExecStart= word: double-quoted, with systemd's escapes for \\ " and its % and $ expansions.
iop_systemd_quote() {
  # sed, not \${var//…}: bash 5.2 gives & and \\ in substitution replacements a meaning of their own.
  printf '"%s"' "$(printf '%s' "$1" | sed -e 's/\\\\/\\\\\\\\/g' -e 's/"/\\\\"/g' -e 's/%/%%/g' -e 's/\\$/$$/g')"
}

iop_xml_escape() {
  printf '%s' "$1" | sed -e 's/&/\\&amp;/g' -e 's/</\\&lt;/g' -e 's/>/\\&gt;/g' -e 's/"/\\&quot;/g' -e "s/'/\\&apos;/g"
}

# systemd unit for the node: user unit (default.target; its agents share the node's user) or, as root, a system
# unit (multi-user.target). The system unit runs the node as root with only the capabilities it needs to start
# agents as $IOP_AGENT_USER (setuid/setgid), to stop their process trees (kill) and to enter their workspaces
# (dac_read_search: agents make their directories 0700); no CAP_DAC_OVERRIDE, so it cannot write files that are
# not root's. setuid(2) to the agent drops every capability, so the agents have none; NoNewPrivileges stays on
# (it stops gains through execve, e.g. sudo, not a root process dropping to a user). The node's token and data
# dir are root's 0600/0700, out of the agents' reach; their working directory is the workspaces dir.
# Arguments: binary edge node-id token-file data-dir scope(user|system) fingerprint workspaces-dir agent-home.
# The token stays in its file.
iop_systemd_unit() {
  local word exec_start="" wanted=default.target
  for word in "$1" run --edge "$2" --node-id "$3" --token-file "$4" --data-dir "$5" \${7:+--edge-fingerprint "$7"} \\
    \${8:+--agent-user "$IOP_AGENT_USER"}; do
    exec_start="$exec_start $(iop_systemd_quote "$word")"
  done
  [ "$6" = system ] && wanted=multi-user.target
  cat <<UNIT
[Unit]
Description=IOP node agent ($3)
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
ExecStart=\${exec_start# }
Restart=on-failure
RestartSec=10
RestartPreventExitStatus=3
NoNewPrivileges=yes
UMask=0077
UNIT
  if [ "$6" = system ]; then
    cat <<HARDENED
WorkingDirectory=$(iop_systemd_quote "$8")
ProtectSystem=full
ProtectHome=read-only
PrivateTmp=yes
# No PrivateDevices: the node reports GPUs (nvidia-smi needs /dev/nvidia*) and its agents may use them.
ReadWritePaths=$(iop_systemd_quote "$5") $(iop_systemd_quote "$8") $(iop_systemd_quote "$9")
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
CapabilityBoundingSet=CAP_SETUID CAP_SETGID CAP_KILL CAP_DAC_READ_SEARCH
AmbientCapabilities=
HARDENED
  fi
  cat <<UNIT_TAIL

[Install]
WantedBy=$wanted
UNIT_TAIL
}

# Root installs: the system user CLI agents run as (created once, no login shell), its home $1 (0700) and the
# workspaces dir $2 (0711: the node, root without CAP_DAC_OVERRIDE, passes through it), both its own.
iop_ensure_agent_user() {
  if ! id -u "$IOP_AGENT_USER" >/dev/null 2>&1; then
    command -v useradd >/dev/null 2>&1 || iop_die "useradd not found: cannot create the $IOP_AGENT_USER agent user"
    local shell=/usr/sbin/nologin
    [ -x "$shell" ] || shell=/sbin/nologin
    [ -x "$shell" ] || shell=/bin/false
    useradd --system --user-group --home-dir "$1" --no-create-home --shell "$shell" "$IOP_AGENT_USER" ||
      iop_die "could not create the $IOP_AGENT_USER agent user"
    iop_say "created system user $IOP_AGENT_USER (CLI agents run as it)"
  fi
  mkdir -p "$1" "$2"
  chown "$IOP_AGENT_USER:$IOP_AGENT_USER" "$1" "$2"
  chmod 700 "$1"
  chmod 711 "$2"
}

# launchd property list. Arguments: binary edge node-id token-file data-dir log-file fingerprint.
iop_launchd_plist() {
  local word
  cat <<PLIST_HEAD
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key><string>$IOP_LAUNCHD_LABEL</string>
  <key>ProgramArguments</key>
  <array>
PLIST_HEAD
  # --replaced-exit-code 0: KeepAlive restarts on any non-zero status, so a node whose identity another process
  # took (replaced) must exit 0 here or launchd would start it into a replace loop.
  for word in "$1" run --edge "$2" --node-id "$3" --token-file "$4" --data-dir "$5" --replaced-exit-code 0 \${7:+--edge-fingerprint "$7"}; do
    printf '    <string>%s</string>\\n' "$(iop_xml_escape "$word")"
  done
  cat <<PLIST_TAIL
  </array>
  <key>RunAtLoad</key><true/>
  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>
  <key>StandardOutPath</key><string>$(iop_xml_escape "$6")</string>
  <key>StandardErrorPath</key><string>$(iop_xml_escape "$6")</string>
</dict>
</plist>
PLIST_TAIL
}

iop_install_service() {
  local os="$1" binary="$2" edge="$3" node_id="$4" token_file="$5" data_dir="$6" root="$7" fingerprint="$8"
  if [ "$os" = linux ]; then
    command -v systemctl >/dev/null 2>&1 || iop_die "--service needs systemd (systemctl not found)"
    local unit_dir scope=user workspaces="" agent_home=""
    if [ "$(id -u)" = 0 ]; then
      unit_dir="\${IOP_SYSTEMD_SYSTEM_DIR:-/etc/systemd/system}"
      scope=system
      workspaces="$root/workspaces"
      agent_home="$root/agent-home"
      iop_ensure_agent_user "$agent_home" "$workspaces"
      # Everything the node owns is root's and private (an earlier install ran the node as iop-node; the node
      # has no CAP_DAC_OVERRIDE, so files of that user would be unreadable to it now).
      chown -R root:root "$token_file" "$data_dir"
      chmod 600 "$token_file"
      chmod 700 "$data_dir"
    else
      unit_dir="\${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user"
    fi
    mkdir -p "$unit_dir"
    iop_systemd_unit "$binary" "$edge" "$node_id" "$token_file" "$data_dir" "$scope" "$fingerprint" \\
      "$workspaces" "$agent_home" >"$unit_dir/$IOP_SERVICE_NAME.service"
    if [ "$scope" = system ]; then
      iop_say "CLI agents run as $IOP_AGENT_USER in $workspaces (workspace_roots); they cannot read $token_file or $data_dir"
      systemctl daemon-reload
      systemctl enable --now "$IOP_SERVICE_NAME.service"
    else
      systemctl --user daemon-reload
      systemctl --user enable --now "$IOP_SERVICE_NAME.service"
      iop_say "user services stop at logout unless lingering is on: sudo loginctl enable-linger $(id -un)"
      iop_say "warning: CLI agents run as $(id -un), the node's own user, and can read its token (install as root to separate them)"
    fi
    iop_say "installed $unit_dir/$IOP_SERVICE_NAME.service (logs: journalctl $([ "$scope" = user ] && echo --user) -u $IOP_SERVICE_NAME)"
  else
    local plist_dir domain
    if [ "$(id -u)" = 0 ]; then
      plist_dir=/Library/LaunchDaemons
      domain=system
    else
      plist_dir="$HOME/Library/LaunchAgents"
      domain="gui/$(id -u)"
    fi
    mkdir -p "$plist_dir"
    local plist="$plist_dir/$IOP_LAUNCHD_LABEL.plist"
    iop_launchd_plist "$binary" "$edge" "$node_id" "$token_file" "$data_dir" "$root/node.log" "$fingerprint" >"$plist"
    launchctl bootout "$domain/$IOP_LAUNCHD_LABEL" >/dev/null 2>&1 || true
    launchctl bootstrap "$domain" "$plist"
    iop_say "installed $plist (log: $root/node.log)"
  fi
}

iop_usage() {
  cat >&2 <<USAGE
usage: curl -fsSL <edge>/install.sh | IOP_TOKEN=<token> bash -s -- --node-id ID [options]
  --node-id ID         this node's id (as registered with 'iop-edge node register')
  --edge HOST:PORT     edge node-transport address (default: $IOP_DEFAULT_EDGE)
  --edge-fingerprint sha256:HEX
                       the edge key the node accepts (default: \${IOP_DEFAULT_EDGE_FINGERPRINT:-none, plaintext})
  --artifact-url URL   where the artifacts are served (default: $IOP_DEFAULT_ARTIFACT_URL)
  --token-file FILE    read the token from FILE instead of IOP_TOKEN
  --service            install and start a systemd unit (Linux) or launchd agent (macOS)
  --no-start           install only
USAGE
}

iop_main() {
  local node_id="" edge="$IOP_DEFAULT_EDGE" artifact_url="$IOP_DEFAULT_ARTIFACT_URL" token_source=""
  local fingerprint="$IOP_DEFAULT_EDGE_FINGERPRINT"
  local service=0 start=1
  while [ "$#" -gt 0 ]; do
    case "$1" in
      --node-id) node_id="\${2:-}"; shift 2 || iop_die "--node-id needs a value" ;;
      --edge) edge="\${2:-}"; shift 2 || iop_die "--edge needs a value" ;;
      --edge-fingerprint) fingerprint="\${2:-}"; shift 2 || iop_die "--edge-fingerprint needs a value" ;;
      --artifact-url) artifact_url="\${2:-}"; shift 2 || iop_die "--artifact-url needs a value" ;;
      --token-file) token_source="\${2:-}"; shift 2 || iop_die "--token-file needs a value" ;;
      --service) service=1; shift ;;
      --no-start) start=0; shift ;;
      -h | --help) iop_usage; return 0 ;;
      --token) iop_die "the token is not accepted as an argument (it would show in the process list): set IOP_TOKEN" ;;
      *) iop_usage; iop_die "unknown argument '$1'" ;;
    esac
  done
  [ -n "$node_id" ] || { iop_usage; iop_die "--node-id is required"; }
  [ -n "$edge" ] || iop_die "--edge HOST:PORT is required"
  [ -n "$artifact_url" ] || iop_die "--artifact-url is required"
  if [ -n "$fingerprint" ]; then
    printf '%s' "$fingerprint" | grep -Eq '^sha256:[0-9a-f]{64}$' ||
      iop_die "--edge-fingerprint must be sha256:<64 lowercase hex digits>"
  else
    iop_say "warning: no edge fingerprint: the node's link (and its token) will be neither encrypted nor authenticated"
  fi
  local token="\${IOP_TOKEN:-}"
  if [ -n "$token_source" ]; then
    [ -r "$token_source" ] || iop_die "cannot read token file $token_source"
    token="$(head -n 1 "$token_source")"
  fi
  [ -n "$token" ] || iop_die "no token: set IOP_TOKEN (the line printed by 'iop-edge node register' does)"
  unset IOP_TOKEN

  local os arch name root
  os="$(iop_detect_os)"
  arch="$(iop_detect_arch)"
  name="$(iop_artifact_name "$os" "$arch")"
  root="$(iop_install_root)"
  artifact_url="\${artifact_url%/}"
  iop_say "node $node_id on $os-$arch; edge $edge; installing $name into $root"

  mkdir -p "$root"
  local temp
  temp="$(mktemp -d "$root/.download.XXXXXX")"
  IOP_TEMP="$temp"
  trap 'rm -rf -- "$IOP_TEMP"' EXIT
  iop_download "$artifact_url/$name" "$temp/$name"
  iop_verify "$temp/$name" "$name"
  iop_say "SHA-256 verified"

  local folder="\${name%.tar.gz}"
  mkdir -p "$root/versions" "$root/bin"
  rm -rf "\${root:?}/versions/$folder"
  tar -xzf "$temp/$name" -C "$root/versions"
  [ -x "$root/versions/$folder/bin/iop-node" ] || iop_die "the artifact does not contain $folder/bin/iop-node"
  ln -sfn "../versions/$folder/bin/iop-node" "$root/bin/iop-node"
  rm -rf "$temp"
  trap - EXIT

  local token_file="$root/node.token" data_dir="$root/node" binary="$root/bin/iop-node"
  iop_write_token "$token_file" "$token"
  token=""
  mkdir -p "$data_dir"
  chmod 700 "$data_dir"
  iop_say "installed $binary ($("$binary" version)); token in $token_file (mode 600)"

  if [ "$service" = 1 ]; then
    iop_install_service "$os" "$binary" "$edge" "$node_id" "$token_file" "$data_dir" "$root" "$fingerprint"
    return 0
  fi
  set -- run --edge "$edge" --node-id "$node_id" --token-file "$token_file" --data-dir "$data_dir" \\
    \${fingerprint:+--edge-fingerprint "$fingerprint"}
  if [ "$start" = 1 ]; then
    iop_say "starting the node in the foreground (Ctrl-C stops it; --service installs a service instead)"
    exec env -u IOP_TOKEN -u IOP_NODE_TOKEN "$binary" "$@" </dev/null
  else
    iop_say "start it with: $binary $*"
  fi
}

# Tests load the functions without running the installer.
if [ "\${IOP_INSTALL_LIBRARY_ONLY:-}" != 1 ]; then
  iop_main "$@"
fi
`;

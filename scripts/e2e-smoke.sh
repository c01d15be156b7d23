#!/usr/bin/env bash
# Real-CLI end-to-end smoke: `make test-e2e IOP_E2E_PROFILE=opencode|codex|claude|cline` (default opencode);
# `IOP_E2E_PROFILE=claude-client` runs Claude Code against the edge's Anthropic Messages API instead (the model
# on the node is served by the agent model server; packages/testkit/bin/e2e-claude-client.mjs);
# `IOP_E2E_PROFILE=opencode-fabric|codex-fabric` runs the shipped fabric profile (issue 42) through the edge's
# OpenAI API, the CLI's model calls going back over the node's link as child runs to a pool model served by the
# agent model server (packages/testkit/bin/e2e-agent-fabric.mjs);
# `IOP_E2E_PROFILE=release` runs the release build + one-line node bootstrap test instead, `windows` the Windows
# node artifact under Wine.
#
# Installs the real CLI from npm into a cache folder outside the repo (IOP_CLI_CACHE, default
# ~/.cache/iop/clis), starts the loopback agent model server (packages/testkit), then runs two legs:
#   1. adapter leg  (apps/node/dist/adapters/cli/smoke/real-cli-smoke.js): the cli adapter driven directly —
#      two prompts in one session (the second sees the first), cancel during a long tool call (the tool process
#      dies, the session stays usable), terminate-session (no CLI process left);
#   2. edge → node leg (packages/testkit/bin/e2e-edge-console.mjs): a real `iop-edge console` and `iop-node run`
#      with the profile on test-node — two prompts in one session, /sessions, /terminate-session, no process left.
# Cancel goes through the adapter leg only: the console cancels with Ctrl-C on a terminal, which piped stdin
# cannot send. Needs the built apps (`make test-e2e` builds first). Scratch files stay in $IOP_E2E_KEEP if set.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
profile="${IOP_E2E_PROFILE:-opencode}"
cache="${IOP_CLI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/iop/clis}"

# IOP_E2E_PROFILE=release: build the linux-amd64 release archive, unpack it, bootstrap a node from it with the
# printed one-liner (no Node.js on PATH) and complete a run — see test/e2e/release/run.sh.
if [[ "$profile" == 'release' ]]; then exec bash "$repo/test/e2e/release/run.sh"; fi
# IOP_E2E_PROFILE=windows: build the windows-amd64 node artifact and run its node.exe under Wine (installed from
# apt when missing) against a real edge and fake backends — see test/e2e/windows/run.sh.
if [[ "$profile" == 'windows' ]]; then exec bash "$repo/test/e2e/windows/run.sh"; fi

case "$profile" in
  opencode | opencode-fabric) package='opencode-ai' binary='opencode' ;;
  codex | codex-fabric) package='@openai/codex' binary='codex' ;;
  claude | claude-client) package='@anthropic-ai/claude-code' binary='claude' ;;
  cline) package='cline' binary='cline' ;;
  antigravity)
    echo "e2e: antigravity's agy is not published on npm; its profile is covered by replay tests only" >&2
    exit 2
    ;;
  *)
    echo "e2e: unknown IOP_E2E_PROFILE=$profile (opencode, codex, claude, claude-client, cline, opencode-fabric, codex-fabric, release, windows)" >&2
    exit 2
    ;;
esac

for built in apps/node/dist/adapters/cli/smoke/real-cli-smoke.js apps/node/dist/main.js apps/edge/dist/main.js \
  packages/testkit/dist/agent-model-server/agent-model-server.js; do
  [[ -f "$repo/$built" ]] || { echo "e2e: $built is missing: run 'make build' first" >&2; exit 2; }
done

if [[ ! -x "$cache/node_modules/.bin/$binary" ]]; then
  echo "==> installing $package into $cache"
  mkdir -p "$cache"
  npm install --prefix "$cache" --no-audit --no-fund --loglevel=error "$package"
fi
echo "==> $binary $("$cache/node_modules/.bin/$binary" --version 2>/dev/null | head -1)"

scratch="${IOP_E2E_KEEP:-$(mktemp -d "${TMPDIR:-/tmp}/iop-e2e-$profile-XXXXXX")}"
mkdir -p "$scratch"
server_pid=''
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null || true
  # An `if`, not `&&`: under set -e a false test as the trap's last command would turn a pass into exit 1.
  if [[ -z "${IOP_E2E_KEEP:-}" ]]; then rm -rf "$scratch"; fi
}
trap cleanup EXIT

node "$repo/packages/testkit/bin/agent-model-server.mjs" --verbose >"$scratch/model-server.out" 2>&1 &
server_pid=$!
model_url=''
for _ in $(seq 1 100); do
  model_url="$(sed -n 's/^AGENT_MODEL_SERVER_URL=//p' "$scratch/model-server.out")"
  [[ -n "$model_url" ]] && break
  sleep 0.1
done
[[ -n "$model_url" ]] || { echo "e2e: agent model server did not start" >&2; cat "$scratch/model-server.out" >&2; exit 1; }
echo "==> agent model server $model_url"

status=0
# IOP_E2E_PROFILE=claude-client: Claude Code as a client of the edge's Anthropic Messages API (the pool model
# served through a node from the agent model server), not as a CLI profile on a node.
if [[ "$profile" == 'claude-client' ]]; then
  echo "==> claude code -> edge /v1/messages -> node -> model server"
  node "$repo/packages/testkit/bin/e2e-claude-client.mjs" --repo "$repo" --clis "$cache" --model-url "$model_url" \
    --model-log "$scratch/model-server.out" --scratch "$scratch/claude-client" || status=1
  if [[ $status -eq 0 ]]; then echo "e2e $profile: passed"; else echo "e2e $profile: FAILED" >&2; fi
  exit $status
fi

# IOP_E2E_PROFILE=*-fabric: the CLI's shipped fabric profile on a node, asked through the edge's OpenAI API; its
# model calls reach the model server only through the run's node-loopback endpoint and the edge (child runs).
if [[ "$profile" == *-fabric ]]; then
  echo "==> edge /v1/chat/completions -> node -> $binary -> run endpoint -> edge (child runs) -> node -> model server"
  node "$repo/packages/testkit/bin/e2e-agent-fabric.mjs" --repo "$repo" --profile-name "$profile" --clis "$cache" \
    --model-url "$model_url" --model-log "$scratch/model-server.out" --scratch "$scratch/fabric" || status=1
  if [[ $status -eq 0 ]]; then echo "e2e $profile: passed"; else echo "e2e $profile: FAILED" >&2; fi
  exit $status
fi

echo "==> adapter leg ($profile)"
node "$repo/apps/node/dist/adapters/cli/smoke/real-cli-smoke.js" --profile "$profile" --clis "$cache" \
  --model-url "$model_url" --scratch "$scratch/adapter" 2>"$scratch/adapter.log" || {
  status=1
  tail -20 "$scratch/adapter.log" >&2
}

echo "==> edge -> node leg ($profile)"
node "$repo/apps/node/dist/adapters/cli/smoke/real-cli-smoke.js" --profile "$profile" --clis "$cache" \
  --model-url "$model_url" --scratch "$scratch/edge-profile" --print-profile >"$scratch/profile.json"
history_flag=()
[[ "$profile" == 'cline' ]] && history_flag=(--no-history) # cline --json cannot resume a task
node "$repo/packages/testkit/bin/e2e-edge-console.mjs" --repo "$repo" --profile-name "$profile" \
  --profile-json "$scratch/profile.json" --scratch "$scratch/edge" --clis "$cache" "${history_flag[@]}" || status=1

if [[ $status -eq 0 ]]; then echo "e2e $profile: passed"; else echo "e2e $profile: FAILED" >&2; fi
exit $status

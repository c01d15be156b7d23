#!/usr/bin/env bash
# `make run`: an edge with configs/edge.yaml plus one local node (test-node, fake-cli profile) connected to it,
# then the ops console in this terminal. Everything lives under .cache/run (data dir, token); Ctrl-D or /exit stops.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
state="$repo/.cache/run"
mkdir -p "$state"
config="$state/edge.yaml"
# The example config with a private data dir, so a run never writes outside .cache/run, and quieter logs: the
# console prints node and run events itself; warnings and errors still show (as readable lines).
sed -e "s#^\(  data_dir:\).*#\1 \"$state/edge-data\"#" \
  -e "s#^\(  level:\) 'info'#\1 'warn'#" -e "s#^\(  format:\) 'json'#\1 'pretty'#" configs/edge.yaml > "$config"

bin/iop-edge node register test-node --config "$config" --json > "$state/register.json"
node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));require("fs").writeFileSync(process.argv[2],r.token+"\n",{mode:0o600})' \
  "$state/register.json" "$state/test-node.token"
edge_address="$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).edge_address)' "$state/register.json")"

node_log="$state/node.log"
(
  # Give the edge a moment to listen; the node retries on its own after its first registration only.
  for _ in $(seq 1 50); do
    if node -e 'const [h,p]=process.argv[1].split(":");require("net").connect(+p,h).on("connect",()=>process.exit(0)).on("error",()=>process.exit(1))' "$edge_address" 2>/dev/null; then break; fi
    sleep 0.2
  done
  exec bin/iop-node run --edge "$edge_address" --node-id test-node --token-file "$state/test-node.token" \
    --data-dir "$state/node-data"
) >"$node_log" 2>&1 &
node_pid=$!
trap 'kill "$node_pid" 2>/dev/null || true' EXIT

echo "edge: node transport $edge_address; OpenAI API and A2A as configured in configs/edge.yaml; node log: $node_log"
bin/iop-edge console --config "$config"

#!/usr/bin/env bash
# Windows node end-to-end test (`make test-e2e IOP_E2E_PROFILE=windows`): builds the windows-amd64 node artifact,
# installs Debian's wine64 when it is missing, and runs the artifact's own node.exe under Wine against a real edge
# (from this checkout) with the testkit's fake Ollama and fake OpenAI-compatible servers on 127.0.0.1. Checks:
# the node registers; both providers turn healthy; discovery finds both servers; a pooled chat and a stream through each adapter; the node's
# run history (node:sqlite, read back with `iop-node history` under Wine); the node comes back after an edge
# restart and serves again; and install.ps1's pinned download step as far as it goes without PowerShell
# (check-install-ps1.mjs: the script the one-liner pins, and the artifact it would fetch and verify).
# Prints a time per step; exit 0 = passed. IOP_E2E_SKIP_BUILD=1 reuses dist/release/artifacts from a previous
# build; IOP_WINEPREFIX (default ~/.cache/iop/wineprefix) is kept between runs (creating one takes ~10 s).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$repo"
export PATH="$repo/.tools/node_modules/.bin:$PATH" TURBO_TELEMETRY_DISABLED=1

work="$(mktemp -d "${TMPDIR:-/tmp}/iop-windows-e2e.XXXXXX")"
pids=()
edge_pid=''
node_pid=''
data_dir_name="iop-e2e-$(basename "$work" | tr -dc 'A-Za-z0-9')"
cleanup() {
  local status=$?
  [ -n "$node_pid" ] && kill "$node_pid" 2>/dev/null || true
  [ -n "$edge_pid" ] && kill "$edge_pid" 2>/dev/null || true
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -n "$node_pid" ] && wait "$node_pid" 2>/dev/null || true
  [ -n "$edge_pid" ] && wait "$edge_pid" 2>/dev/null || true
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  # Wine's server for this prefix outlives the node by a few seconds; stop it (this prefix only).
  [ -n "${WINEPREFIX:-}" ] && [ -x "${wineserver:-}" ] && WINEPREFIX="$WINEPREFIX" "$wineserver" -k 2>/dev/null || true
  [ -n "${WINEPREFIX:-}" ] && rm -rf "$WINEPREFIX/drive_c/$data_dir_name"
  if [ "$status" -ne 0 ]; then
    echo "--- windows e2e FAILED; logs in $work:" >&2
    for log in "$work"/*.log; do [ -f "$log" ] && { echo "=== $log" >&2; tail -n 40 "$log" >&2; }; done
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
total_started=$(date +%s.%N)
step_started=0
step() {
  local now
  now=$(date +%s.%N)
  [ "$step_started" != 0 ] && printf '    %.1f s\n' "$(echo "$now - $step_started" | bc)"
  step_started=$now
  echo "==> $*"
}
fail() {
  echo "windows e2e: $*" >&2
  exit 1
}
# Polls `$@` every 0.2 s for at most $1 seconds.
wait_for() {
  local seconds=$1
  shift
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

version="$(node -p 'require("./package.json").version')"
artifact="dist/release/artifacts/iop-node-$version-windows-amd64.tar.gz"
if [ "${IOP_E2E_SKIP_BUILD:-}" != 1 ]; then
  step "make pack-node-target NODE_TARGET=windows-amd64"
  make pack-node-target NODE_TARGET=windows-amd64 >"$work/build.log" 2>&1 || fail "build failed (see $work/build.log)"
  grep -E '^==>|MB|downloaded|cached' "$work/build.log" | sed 's/^/    | /'
fi
[ -f "$artifact" ] || fail "$artifact missing (run without IOP_E2E_SKIP_BUILD)"

step "wine64"
wine=/usr/lib/wine/wine64
wineserver=/usr/lib/wine/wineserver64
[ -x "$wineserver" ] || wineserver=/usr/lib/wine/wineserver
if [ ! -x "$wine" ]; then
  command -v apt-get >/dev/null || fail "wine64 is missing and there is no apt-get to install it"
  sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo -n)
  echo "    | installing wine64 from apt"
  { "${sudo[@]}" apt-get install -y wine64 || { "${sudo[@]}" apt-get update && "${sudo[@]}" apt-get install -y wine64; }; } \
    >"$work/apt.log" 2>&1 || fail "apt-get install wine64 failed (see $work/apt.log)"
fi
[ -x "$wine" ] || fail "$wine missing after installing wine64"
[ -x "$wineserver" ] || wineserver=/usr/lib/wine/wineserver
export WINEDEBUG=-all WINEPREFIX="${IOP_WINEPREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/iop/wineprefix}"
# Node 22 refuses to start on what Wine reports as its Windows version without this.
export NODE_SKIP_PLATFORM_CHECK=1
mkdir -p "$WINEPREFIX"
echo "    | $(dpkg-query -W -f '${Package} ${Version}' wine64 2>/dev/null || echo wine64) prefix $WINEPREFIX"

step "unpack $(basename "$artifact") ($(du -h "$artifact" | cut -f1))"
mkdir "$work/node-host"
tar -xzf "$artifact" -C "$work/node-host"
bundle="$work/node-host/iop-node-$version-windows-amd64"
[ -f "$bundle/runtime/node.exe" ] && [ -f "$bundle/lib/iop-node.cjs" ] || fail "the artifact has no runtime/node.exe + lib/iop-node.cjs"
# Wine's stdio must be files, not pipes (a pipe gives node.exe EBADF).
win_node() { (cd "$bundle" && exec "$wine" runtime/node.exe lib/iop-node.cjs "$@" </dev/null); }
win_node version >"$work/version.out" 2>"$work/version.log" || fail "node.exe lib/iop-node.cjs version failed"
echo "    | $(head -n 1 "$work/version.out")"

step "fake Ollama, fake OpenAI-compatible server, edge"
node packages/testkit/bin/fake-inference-server.mjs ollama --port 0 --models win-ollama-model --tokens 6 >"$work/fake-ollama.log" 2>&1 &
pids+=($!)
node packages/testkit/bin/fake-inference-server.mjs openai --port 0 --models win-openai-model --tokens 6 >"$work/fake-openai.log" 2>&1 &
pids+=($!)
wait_for 15 grep -q FAKE_OLLAMA_URL= "$work/fake-ollama.log" || fail "fake Ollama did not start"
wait_for 15 grep -q FAKE_OPENAI_URL= "$work/fake-openai.log" || fail "fake OpenAI server did not start"
ollama_url="$(sed -n 's/^FAKE_OLLAMA_URL=//p' "$work/fake-ollama.log")"
openai_url="$(sed -n 's/^FAKE_OPENAI_URL=//p' "$work/fake-openai.log")"
edge_port=$(free_port)
openai_port=$(free_port)
admin_port=$(free_port)
bootstrap_port=$(free_port)
mkdir "$work/artifacts"
cp "$artifact" "$work/artifacts/"
cat >"$work/edge.yaml" <<YAML
edge:
  id: edge-windows-e2e
  listen: '127.0.0.1:$edge_port'
  data_dir: '$work/edge-data'
  tls: { enabled: false, cert_file: '', key_file: '' }
  heartbeat_interval_ms: 1000
  heartbeat_timeout_ms: 5000
logging: { level: info, format: json }
metrics: { enabled: false }
refresh: { enabled: true, listen: '127.0.0.1:$admin_port' }
ui: { enabled: false }
bootstrap: { listen: '127.0.0.1:$bootstrap_port', artifact_dir: '$work/artifacts' }
openai: { enabled: true, listen: '127.0.0.1:$openai_port', timeout_sec: 60 }
a2a: { enabled: false }
models:
  - { id: win-ollama-model, providers: { win-ollama: win-ollama-model } }
  - { id: win-openai-model, providers: { win-openai: win-openai-model } }
nodes:
  - id: win-node
    runtime: { max_concurrency: 4, health_probe_interval_ms: 1000 }
    discovery: { openai_compat_urls: ['$openai_url'], local_ports: [] }
    adapters:
      ollama: { enabled: true, base_url: '$ollama_url' }
      instances:
        - { name: oai, type: openai_compat, enabled: true, provider: vllm, base_url: '$openai_url/v1' }
    providers:
      - { id: win-ollama, type: ollama, category: local_inference, adapter: ollama, models: [win-ollama-model], capacity: 2 }
      - { id: win-openai, type: vllm, category: api, adapter: oai, models: [win-openai-model], capacity: 2 }
YAML
edge() { bin/iop-edge "$@"; }
edge bootstrap pack --config "$work/edge.yaml" >"$work/pack.log" 2>&1 || fail "bootstrap pack failed"
edge node register win-node --config "$work/edge.yaml" --json >"$work/register.json" 2>"$work/register.log" ||
  fail "node register failed"
token="$(node -p 'JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).token' "$work/register.json")"
start_edge() { # log file
  bin/iop-edge serve --config "$work/edge.yaml" >"$1" 2>&1 &
  edge_pid=$!
  wait_for 30 grep -q 'bootstrap' "$1" || fail "edge did not start (see $1)"
}
start_edge "$work/edge.log"

step "node.exe under Wine registers (first start of a prefix creates it)"
IOP_NODE_TOKEN="$token" OLLAMA_HOST="${ollama_url#http://}" win_node run --edge "127.0.0.1:$edge_port" --node-id win-node \
  --data-dir "C:\\$data_dir_name" >"$work/node.log" 2>&1 &
node_pid=$!
wait_for 120 grep -q 'registered with edge' "$work/node.log" || fail "the Windows node did not register"
grep -m1 'registered with edge' "$work/node.log" | sed 's/^/    | /'

providers_healthy() {
  edge nodes list --json --addr "127.0.0.1:$admin_port" >"$work/nodes.json" 2>/dev/null || return 1
  node -e '
    const nodes = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).nodes;
    const node = nodes.find((entry) => entry.node_id === "win-node");
    if (!node || node.os !== "win32") process.exit(1);
    const health = Object.fromEntries(node.providers.map((p) => [p.provider_id, p.health]));
    process.exit(health["win-ollama"] === "healthy" && health["win-openai"] === "healthy" ? 0 : 1);
  ' "$work/nodes.json"
}
show_providers() {
  node -e '
    const nodes = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).nodes;
    for (const p of nodes.find((entry) => entry.node_id === "win-node")?.providers ?? [])
      console.log(`    | ${p.provider_id}: ${p.health} ${p.health_cause ?? ""} ${p.health_detail ?? ""}`);
  ' "$work/nodes.json"
}

step "both providers healthy (nodes list --json)"
wait_for 30 providers_healthy || { show_providers; fail "providers did not turn healthy"; }
show_providers

chat() { # model, output file
  curl -fsS -m 30 "http://127.0.0.1:$openai_port/v1/chat/completions" -H 'content-type: application/json' \
    -d "{\"model\":\"$1\",\"messages\":[{\"role\":\"user\",\"content\":\"hello from wine\"}]}" -o "$2"
}
check_chat() { # output file
  node -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const text = r.choices?.[0]?.message?.content ?? "";
    if (!text || r.choices[0].finish_reason !== "stop") { console.error("bad completion", JSON.stringify(r)); process.exit(1); }
    console.log(`    | ${r.model}: ${JSON.stringify(text.slice(0, 50))} (${r.usage?.total_tokens} tokens)`);
  ' "$1"
}
stream() { # model, output file
  curl -fsS -N -m 30 "http://127.0.0.1:$openai_port/v1/chat/completions" -H 'content-type: application/json' \
    -d "{\"model\":\"$1\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"stream from wine\"}]}" -o "$2"
}
check_stream() { # output file
  node -e '
    const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter((l) => l.startsWith("data: "));
    if (lines.at(-1) !== "data: [DONE]") { console.error("stream did not end with [DONE]"); process.exit(1); }
    const deltas = lines.slice(0, -1).map((l) => JSON.parse(l.slice(6))).flatMap((c) => c.choices ?? []);
    const text = deltas.map((c) => c.delta?.content ?? "").join("");
    if (!text) { console.error("stream had no text"); process.exit(1); }
    console.log(`    | stream: ${lines.length - 1} chunks, ${JSON.stringify(text.slice(0, 50))}`);
  ' "$1"
}

step "discovery under Wine found both servers (nodes list --json)"
node -e '
  const nodes = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).nodes;
  const backends = nodes.find((entry) => entry.node_id === "win-node")?.discovered?.backends ?? [];
  const found = backends.map((b) => `${b.kind} ${b.base_url} [${b.models.join(",")}]`);
  for (const line of found) console.log(`    | ${line}`);
  const kinds = backends.map((b) => b.base_url);
  if (!kinds.includes(process.argv[2]) || !kinds.includes(`${process.argv[3]}/v1`)) {
    console.error(`discovery found ${JSON.stringify(found)}`);
    process.exit(1);
  }
' "$work/nodes.json" "$ollama_url" "$openai_url" || fail "discovery under Wine did not find the fake servers"

step "pooled chat and stream through the Ollama and the OpenAI-compatible adapter"
for model in win-ollama-model win-openai-model; do
  started=$(date +%s%N)
  chat "$model" "$work/chat-$model.json" || fail "chat with $model failed: $(cat "$work/chat-$model.json" 2>/dev/null)"
  check_chat "$work/chat-$model.json"
  echo "    | chat $model $((($(date +%s%N) - started) / 1000000)) ms"
  started=$(date +%s%N)
  stream "$model" "$work/stream-$model.txt" || fail "stream with $model failed"
  check_stream "$work/stream-$model.txt"
  echo "    | stream $model $((($(date +%s%N) - started) / 1000000)) ms"
done

step "run history written (iop-node history under Wine)"
history_complete() {
  win_node history --json --limit 20 --data-dir "C:\\$data_dir_name" >"$work/history.json" 2>"$work/history.log" || return 1
  node -e '
    const runs = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const done = runs.filter((run) => run.status === "completed");
    if (done.length < 4) process.exit(1);
    console.log(`    | ${runs.length} runs, ${done.length} completed (adapters: ${[...new Set(done.map((r) => r.adapter))].sort().join(", ")})`);
  ' "$work/history.json"
}
wait_for 30 history_complete || fail "history holds fewer than 4 completed runs: $(head -c 600 "$work/history.json")"
history_complete

step "edge restart: the node comes back and serves again"
kill "$edge_pid"
wait "$edge_pid" 2>/dev/null || true
edge_pid=''
restarted=$(date +%s%N)
start_edge "$work/edge-restarted.log"
registered_again() { [ "$(grep -c 'registered with edge' "$work/node.log")" -ge 2 ]; }
# The node's reconnect backoff is up to ~10 s per attempt.
wait_for 60 registered_again || fail "the node did not register again after the edge restart"
grep 'registered with edge' "$work/node.log" | tail -n 1 | sed 's/^/    | /'
wait_for 30 providers_healthy || { show_providers; fail "providers not healthy after the edge restart"; }
echo "    | back and healthy $((($(date +%s%N) - restarted) / 1000000)) ms after the restart"
chat win-ollama-model "$work/chat-after.json" || fail "chat after the edge restart failed"
check_chat "$work/chat-after.json"
stream win-openai-model "$work/stream-after.txt" || fail "stream after the edge restart failed"
check_stream "$work/stream-after.txt"

step "install.ps1's pinned download step (without PowerShell)"
node test/e2e/windows/check-install-ps1.mjs "$work/register.json" "$artifact" windows-amd64

step "done"
printf 'windows e2e: passed in %.1f s\n' "$(echo "$(date +%s.%N) - $total_started" | bc)"

#!/usr/bin/env bash
# Release end-to-end test (`IOP_E2E_PROFILE=release make test-e2e`): builds the linux-amd64 release, unpacks it
# into an empty folder, runs `config init`, `serve` and `node register` from the archive's own iop-edge, then runs
# the printed Linux one-liner verbatim with a clean HOME and no Node.js on PATH. The bootstrapped node must
# connect and complete a run (an OpenAI chat completion routed to it, answered by the testkit's fake Ollama).
# Also checks the token file (0600, never in a process's arguments), the node's run history (node:sqlite) and
# the node:sqlite backend's contract under the artifacts' Node 22. Prints timings and sizes; exit 0 = passed.
# Set IOP_E2E_SKIP_BUILD=1 to reuse dist/ from a previous build.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$repo"
export PATH="$repo/.tools/node_modules/.bin:$PATH" TURBO_TELEMETRY_DISABLED=1

node_id=e2e-node
work="$(mktemp -d "${TMPDIR:-/tmp}/iop-release-e2e.XXXXXX")"
pids=()
cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "$status" -ne 0 ]; then
    echo "--- release e2e FAILED; logs in $work:" >&2
    for log in "$work"/*.log; do [ -f "$log" ] && { echo "=== $log" >&2; tail -n 40 "$log" >&2; }; done
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
step_started=0
step() {
  now=$(date +%s.%N)
  [ "$step_started" != 0 ] && printf '    %.1f s\n' "$(echo "$now - $step_started" | bc)"
  step_started=$now
  echo "==> $*"
}
fail() {
  echo "release e2e: $*" >&2
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
archive="dist/iop-edge-$version-linux-amd64.tar.gz"
if [ "${IOP_E2E_SKIP_BUILD:-}" != 1 ]; then
  step "make build NODE_TARGETS=linux-amd64"
  make build NODE_TARGETS=linux-amd64 >"$work/build.log" 2>&1 || fail "build failed (see $work/build.log)"
  grep -E '^==>|MB' "$work/build.log" | sed 's/^/    | /'
fi
[ -f "$archive" ] || fail "$archive missing"

step "unpack $(basename "$archive") ($(du -h "$archive" | cut -f1)) into an empty folder"
mkdir "$work/edge-host"
tar -xzf "$archive" -C "$work/edge-host"
bundle="$work/edge-host/iop-edge-$version-linux-amd64"
ls -la "$bundle" "$bundle/artifacts" | sed 's/^/    | /'

step "config init, with this test's ports"
edge_port=$(free_port)
bootstrap_port=$(free_port)
openai_port=$(free_port)
admin_port=$(free_port)
ui_port=$(free_port)
fake_ollama_log="$work/fake-ollama.log"
node packages/testkit/bin/fake-inference-server.mjs ollama --port 0 --models e2e-model --tokens 5 >"$fake_ollama_log" 2>&1 &
pids+=($!)
wait_for 10 grep -q FAKE_OLLAMA_URL= "$fake_ollama_log" || fail "fake Ollama did not start"
ollama_url="$(sed -n 's/^FAKE_OLLAMA_URL=//p' "$fake_ollama_log")"
(cd "$bundle" && ./iop-edge config init --public-url "http://127.0.0.1:$bootstrap_port")
node test/e2e/release/configure-edge.mjs "$bundle/edge.yaml" "$node_id" "$edge_port" "$bootstrap_port" \
  "$openai_port" "$admin_port" "$ollama_url" "$ui_port"
(cd "$bundle" && ./iop-edge config check >/dev/null)
# config init generated the admin token (the admin API and the dashboard need it, on loopback too) and kept the
# file private.
[ "$(stat -c %a "$bundle/edge.yaml")" = 600 ] || fail "config init left edge.yaml mode $(stat -c %a "$bundle/edge.yaml")"
admin_token="$(sed -nE 's/.*admin_token: *"?(iop-admin-[A-Za-z0-9_-]+)"?.*/\1/p' "$bundle/edge.yaml" | head -n 1)"
[ -n "$admin_token" ] || fail "config init wrote no refresh.admin_token"

step "iop-edge serve"
(cd "$bundle" && exec ./iop-edge serve) >"$work/edge.log" 2>&1 &
pids+=($!)
wait_for 15 grep -q 'bootstrap' "$work/edge.log" || fail "edge did not start its bootstrap server"
grep -E '^ ' "$work/edge.log" | sed 's/^/    | /'

step "iop-edge node register $node_id"
(cd "$bundle" && ./iop-edge node register "$node_id") >"$work/register.out"
line="$(sed -n 's/^ *\(f="\$(mktemp)" && curl -fsSL .*\)$/\1/p' "$work/register.out" | head -n 1)"
[ -n "$line" ] || fail "node register printed no Linux one-liner: $(cat "$work/register.out")"
# config init enabled edge.tls: the line pins install.sh's SHA-256 and the edge's key.
grep -q -- "--edge-fingerprint 'sha256:" <<<"$line" || fail "the one-liner carries no edge fingerprint: $line"
token="$(sed -n "s/^.*IOP_TOKEN='\([^']*\)'.*$/\1/p" <<<"$line")"
[ -n "$token" ] || fail "no token in the one-liner"
grep -q 'Start-IopNode' "$work/register.out" || fail "node register printed no Windows line"

step "run the one-liner verbatim: clean HOME, no Node.js on PATH"
# A PATH with every tool of /usr/bin and /bin except Node.js and its package managers.
sandbox="$work/sandbox-bin"
mkdir "$sandbox"
for dir in /usr/local/bin /usr/bin /bin; do
  for tool in "$dir"/*; do
    name="$(basename "$tool")"
    case "$name" in node | nodejs | npm | npx | corepack | pnpm | yarn) continue ;; esac
    [ -e "$sandbox/$name" ] || ln -s "$tool" "$sandbox/$name"
  done
done
env -i HOME="$work/node-home" PATH="$sandbox" bash -c 'command -v node' >/dev/null 2>&1 && fail "node is on the sandbox PATH"
mkdir "$work/node-home"
# As root the installer would use /opt/iop; IOP_HOME (its documented override) keeps the test inside $work.
root_override=()
[ "$(id -u)" = 0 ] && root_override=(IOP_HOME="$work/node-home/.iop")
# The line goes to the shell on stdin, as when pasted into a terminal (bash -c would put it in an argv).
env -i HOME="$work/node-home" PATH="$sandbox" LANG=C.UTF-8 "${root_override[@]}" bash -s <<<"$line" >"$work/node.log" 2>&1 &
pids+=($!)
installer_pid=$!
wait_for 60 grep -q 'registered' "$work/node.log" || fail "the node did not register"
grep 'iop-install' "$work/node.log" | sed 's/^/    | /'

step "a run through the edge completes on the bootstrapped node"
response="$work/completion.json"
send_run() {
  curl -fsS "http://127.0.0.1:$openai_port/v1/chat/completions" -H 'content-type: application/json' \
    -d '{"model":"e2e-model","messages":[{"role":"user","content":"hello from the release e2e"}]}' -o "$response"
}
run_started=$(date +%s%N)
wait_for 20 send_run || fail "chat completion failed: $(cat "$response" 2>/dev/null)"
run_ms=$((($(date +%s%N) - run_started) / 1000000))
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const text = r.choices?.[0]?.message?.content ?? "";
  if (!text || r.choices[0].finish_reason !== "stop") { console.error("bad completion", JSON.stringify(r)); process.exit(1); }
  console.log(`    | completion: ${JSON.stringify(text.slice(0, 60))} (${r.usage?.total_tokens} tokens)`);
' "$response"
echo "    | first successful completion after ${run_ms} ms"

step "the ops dashboard, embedded in the executable"
dashboard="http://127.0.0.1:$ui_port"
curl -fsS "$dashboard/" -o "$work/ui-index.html" || fail "the dashboard did not answer"
grep -q '<div id="app">' "$work/ui-index.html" || fail "the dashboard's index.html is not the app"
script="$(sed -n 's/.*src="\(\/assets\/[^"]*\.js\)".*/\1/p' "$work/ui-index.html" | head -n 1)"
[ -n "$script" ] || fail "no script in the dashboard's index.html"
curl -fsS "$dashboard$script" -o "$work/ui-app.js" || fail "the dashboard's $script is missing"
status="$(curl -sS -o /dev/null -w '%{http_code}' "$dashboard/api/v1/overview")"
[ "$status" = 401 ] || fail "the dashboard API answered $status without the admin token"
status="$(curl -sS -o /dev/null -w '%{http_code}' -H "Host: rebind.evil.example:$ui_port" "$dashboard/")"
[ "$status" = 421 ] || fail "the dashboard answered $status to a foreign Host"
curl -fsS -H "authorization: Bearer $admin_token" "$dashboard/api/v1/overview" -o "$work/ui-overview.json" ||
  fail "the dashboard API did not answer"
node -e '
  const o = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  if (!o.nodes.some((n) => n.node_id === process.argv[2])) { console.error("node missing", JSON.stringify(o.nodes)); process.exit(1); }
  console.log(`    | dashboard: ${o.nodes.length} node(s), ${o.providers.length} provider(s); app ${process.argv[3]} bytes`);
' "$work/ui-overview.json" "$node_id" "$(wc -c <"$work/ui-app.js")"

step "token file, process list, installed layout"
home_iop="$work/node-home/.iop"
mode="$(stat -c %a "$home_iop/node.token")"
[ "$mode" = 600 ] || fail "token file mode $mode"
[ "$(cat "$home_iop/node.token")" = "$token" ] || fail "token file content differs"
ps -eo pid=,args= >"$work/processes.txt"
if grep -F -- "$token" "$work/processes.txt"; then fail "the token appears in a process's arguments"; fi
agent_pid="$(pgrep -f "$home_iop/versions/iop-node-$version-linux-amd64/lib/iop-node.cjs" | head -n 1)"
[ -n "$agent_pid" ] || fail "no agent process"
if tr '\0' '\n' <"/proc/$agent_pid/environ" | grep -F -- "$token" >/dev/null; then fail "the token is in the agent's environment"; fi
readlink "/proc/$agent_pid/exe" | grep -q "$home_iop/versions/" || fail "the agent does not run on the artifact's own Node"
echo "    | agent pid $agent_pid runs $(readlink "/proc/$agent_pid/exe")"
echo "    | token file mode $mode; token in no process's arguments or environment"

step "run history on the node (node:sqlite)"
# Read through the installed launcher with the sandbox PATH: no Node.js needed.
env -i HOME="$work/node-home" PATH="$sandbox" "$home_iop/bin/iop-node" history --json --data-dir "$home_iop/node" \
  >"$work/history.json"
node -e '
  const runs = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const done = runs.filter((run) => run.status === "completed");
  if (done.length === 0) { console.error("no completed run in history", JSON.stringify(runs)); process.exit(1); }
  console.log(`    | ${runs.length} run(s); newest: ${done[0].status} via ${done[0].adapter}`);
' "$work/history.json"
grep -q 'run history uses node:sqlite' "$work/node.log" || fail "the node did not report the node:sqlite backend"

step "node:sqlite contract under the artifact's Node 22"
node22="$home_iop/versions/iop-node-$version-linux-amd64/runtime/node"
"$node22" --disable-warning=ExperimentalWarning test/e2e/release/node-sqlite-contract.mjs | sed 's/^/    | /'

step "stop the node (SIGTERM) and the edge"
kill -TERM "$agent_pid"
wait_for 15 bash -c "! kill -0 $agent_pid" || fail "the agent did not stop on SIGTERM"
wait "$installer_pid" 2>/dev/null || true
step "release e2e passed"
echo "release e2e passed (archive $(du -h "$archive" | cut -f1), node artifact $(du -h "$bundle/artifacts/iop-node-$version-linux-amd64.tar.gz" | cut -f1))"

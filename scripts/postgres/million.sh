#!/usr/bin/env bash
# A million jobs in PostgreSQL, measured with the release binary in a throwaway cluster
# (scripts/postgres/test-cluster.sh). Prints figures; asserts only that the set-up did
# what it meant to. What it measures (N jobs, default 1,000,000, hourly script jobs none
# of which is due):
#   - `hermes cron list --limit 50` and `--limit 50 --offset N/2`, whole processes,
#     median of RUNS runs;
#   - a daemon with the API on: its idle passes (pass_ms from its debug log, woken by a
#     change to one job), its RSS after those passes, and `GET /api/jobs?limit=50`,
#     `GET /api/cron/jobs?limit=50&search=...` and `GET /metrics`, median of RUNS requests.
# The rows are inserted by SQL (as `hermes cron store import` would write them, with the
# listing columns), after the binary created the schema.
# Usage: [RUNS=7] bash scripts/postgres/million.sh [N]
# HERMES_BIN=path uses that binary instead of building target/release/hermes.
set -euo pipefail
cd "$(dirname "$0")/../.."
N="${1:-1000000}"
RUNS="${RUNS:-7}"
if [ -z "${HERMES_BIN:-}" ]; then
    cargo build --release --quiet --bin hermes
    HERMES_BIN="$PWD/target/release/hermes"
fi
BIN="$(realpath "$HERMES_BIN")"
BASE="$(bash scripts/postgres/test-cluster.sh $$)"
WORK="$(mktemp -d)"
DAEMON=""
trap '[ -n "$DAEMON" ] && kill "$DAEMON" 2>/dev/null; rm -rf "$WORK"' EXIT
psql "$BASE" -qc "CREATE DATABASE million"
export HERMES_HOME="$WORK/home" HERMES_CRON_STORE="${BASE/\/postgres\?//million?}" TZ=UTC HERMES_TIMEZONE=UTC
mkdir -p "$HERMES_HOME/scripts"
printf 'true\n' >"$HERMES_HOME/scripts/quiet.sh"
"$BIN" cron store status >/dev/null
t0=$(date +%s.%N)
psql "$HERMES_CRON_STORE" -q <<SQL
INSERT INTO hermes_cron_jobs (id, record, next_run_at, runnable, done_since, state, name)
SELECT lpad(to_hex(i), 12, '0'),
       json_build_object('id', lpad(to_hex(i), 12, '0'), 'name', 'job ' || i, 'prompt', '',
           'script', 'quiet.sh', 'no_agent', true,
           'schedule', json_build_object('kind', 'interval', 'minutes', 60, 'display', 'every 60m'),
           'repeat', json_build_object('times', null, 'completed', 0), 'enabled', true,
           'state', 'scheduled', 'created_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"'),
           'next_run_at', to_char((now() + interval '1 hour') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"'),
           'deliver', 'local'),
       now() + interval '1 hour', true, NULL, 'scheduled', 'job ' || i
FROM generate_series(1, $N) AS i;
VACUUM ANALYZE hermes_cron_jobs;
SQL
t1=$(date +%s.%N)
count=$(psql "$HERMES_CRON_STORE" -Atc "SELECT count(*) FROM hermes_cron_jobs")
[ "$count" = "$N" ] || { echo "million: expected $N rows, got $count" >&2; exit 1; }
echo "postgresql, $N jobs: inserted in $(printf '%.1f' "$(echo "$t1 - $t0" | bc)") s"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms() { echo $(($(date +%s%N) / 1000000)); }
for args in "--limit 50" "--limit 50 --offset $((N / 2))"; do
    m=$(for _ in $(seq "$RUNS"); do a=$(ms); "$BIN" cron list $args >/dev/null; b=$(ms); echo $((b - a)); done | median)
    echo "hermes cron list $args: median ${m} ms"
done
PORT=$((20000 + RANDOM % 20000))
KEY="million-bench-key-0123456789abcdef"
API_SERVER_KEY="$KEY" API_SERVER_PORT="$PORT" RUST_LOG="warn,hermes::scheduler=debug" \
    "$BIN" cron daemon >"$WORK/daemon.log" 2>&1 &
DAEMON=$!
for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
    sleep 0.2
done
# Idle passes: each woken by a change to one job (its name), nothing due.
for i in $(seq "$RUNS"); do
    "$BIN" cron edit 000000000001 --name "job 1 ($i)" >/dev/null
    sleep 1
done
passes=$(grep -o 'pass_ms=[0-9.]*' "$WORK/daemon.log" | cut -d= -f2 | tail -n "$RUNS" | median)
rss=$(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$DAEMON/status")
echo "daemon: idle pass median ${passes} ms (of the last $RUNS); RSS ${rss} MiB"
for path in "/api/jobs?limit=50" "/api/jobs?limit=50&offset=$((N / 2))" \
    "/api/cron/jobs?limit=50&search=job%20777777" "/metrics"; do
    header="Authorization: Bearer $KEY"
    case "$path" in /api/cron/*) header="X-Hermes-Session-Token: $KEY" ;; esac
    m=$(for _ in $(seq "$RUNS"); do
        curl -s -o /dev/null -w '%{time_total}\n' -H "$header" "http://127.0.0.1:$PORT$path"
    done | awk '{print int($1 * 1000)}' | median)
    echo "GET $path: median ${m} ms"
done
rss=$(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$DAEMON/status")
echo "daemon RSS after the requests: ${rss} MiB"

#!/usr/bin/env bash
# The PostgreSQL store measured in a throwaway cluster (scripts/postgres/test-cluster.sh)
# with the release binary. Prints figures; asserts only that the set-up did what it meant
# to. Sections (ONLY=tick,pass,burst,failover, all by default):
#   tick      N recurring script jobs, `hermes cron tick` as a whole process with nothing
#             due and with 1 % due (silent script jobs, the tick waits for them), median
#             of RUNS runs, and the time `hermes cron store import` takes to load them;
#   pass, burst, failover   a daemon's own pass at PASS_SIZES jobs (default
#             10000,100000), 1,000 occurrences due at once on three daemons, failover
#             after a SIGKILL: see scripts/postgres/bench.py (BENCH_ARGS are passed on).
# Usage: [ONLY=...] [RUNS=5] [PASS_SIZES=...] bash scripts/postgres/bench.sh [N ...]
# HERMES_BIN=path uses that binary instead of building target/release/hermes.
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZES=("${@:-1000 10000}")
RUNS="${RUNS:-5}"
ONLY="${ONLY:-tick,pass,burst,failover}"
if [ -z "${HERMES_BIN:-}" ]; then
    cargo build --release --quiet --bin hermes
    HERMES_BIN="$PWD/target/release/hermes"
fi
BIN="$(realpath "$HERMES_BIN")"
BASE="$(bash scripts/postgres/test-cluster.sh $$)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms() { python3 -c 'import sys,time; print(int(time.time()*1000))'; }
[[ ",$ONLY," == *,tick,* ]] || SIZES=()
for N in ${SIZES[@]}; do
    DB="bench$N"
    psql "$BASE" -qc "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
    export HERMES_HOME="$WORK/home$N" HERMES_CRON_STORE="${BASE/\/postgres\?//$DB?}" TZ=UTC HERMES_TIMEZONE=UTC
    mkdir -p "$HERMES_HOME/scripts"
    printf 'true\n' > "$HERMES_HOME/scripts/quiet.sh"
    python3 - "$N" "$WORK/jobs$N.json" <<'PY'
import json, sys, datetime
n, out = int(sys.argv[1]), sys.argv[2]
now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
later = (now + datetime.timedelta(hours=1)).isoformat()
jobs = [{"id": f"{i:012x}", "name": f"job {i}", "prompt": "", "script": "quiet.sh", "no_agent": True,
         "schedule": {"kind": "interval", "minutes": 60, "display": "every 60m"},
         "repeat": {"times": None, "completed": 0}, "enabled": True, "state": "scheduled",
         "created_at": now.isoformat(), "next_run_at": later, "deliver": "local"} for i in range(1, n + 1)]
json.dump({"jobs": jobs}, open(out, "w"), indent=2)
PY
    t0=$(ms); "$BIN" cron store import --from "$WORK/jobs$N.json" >/dev/null; t1=$(ms)
    idle=$(for _ in $(seq "$RUNS"); do a=$(ms); "$BIN" cron tick >/dev/null; b=$(ms); echo $((b - a)); done | median)
    due=$((N / 100))
    busy=$(for _ in $(seq "$RUNS"); do
        sleep 1.1   # a new second: a new occurrence of the same jobs
        psql "$HERMES_CRON_STORE" -qc "UPDATE hermes_cron_jobs SET next_run_at = now() - interval '5 seconds',
            record = jsonb_set(record::jsonb, '{next_run_at}', to_jsonb(to_char((now() - interval '5 seconds') AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"+00:00\"')))::json
            WHERE id IN (SELECT id FROM hermes_cron_jobs ORDER BY position LIMIT $due)"
        a=$(ms); out=$("$BIN" cron tick); b=$(ms)
        ran=$(grep -c ': ok$' <<<"$out" || true)
        [ "$ran" = "$due" ] || { echo "bench: expected $due runs, got $ran" >&2; exit 1; }
        echo $((b - a))
    done | median)
    echo "postgresql, $N jobs: import $((t1 - t0)) ms; tick nothing due median ${idle} ms; with $due due (1 %) median ${busy} ms"
done
python3 scripts/postgres/bench.py --bin "$BIN" --base-url "$BASE" --work "$WORK" --only "$ONLY" \
    --sizes "${PASS_SIZES:-10000,100000}" ${BENCH_ARGS:-}

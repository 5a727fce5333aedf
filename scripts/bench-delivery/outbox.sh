#!/bin/bash
# Measures what the delivery outbox costs per queued delivery: the on-disk size of a row
# in cron/executions.db and the peak RSS of one scheduler pass (`hermes cron tick`) with
# N deliveries queued, both while they wait for their next attempt and when all are due.
# usage: outbox.sh [binary]
# COUNTS="0 1000 10000" sets the queue sizes; REPLY_CHARS=1000 the size of the reply.
#
# One real failed delivery makes the first row: a job delivers to a Mattermost that
# answers 503 to everything, so the binary itself queues it. That row is then copied
# N times (each its own occurrence), as N runs of jobs whose platform was down would.
set -e
BIN=${1:-"$(dirname "$0")/../../target/release/hermes"}
BIN=$(realpath "$BIN")
COUNTS=${COUNTS:-"0 1000 10000"}
ROOT=$(mktemp -d); PORT=$((20000 + RANDOM % 20000))
python3 - $PORT <<'PY' & DOWN=$!
import sys
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
class Down(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b'{"id":"api.context.503","message":"Service Unavailable","status_code":503}'
        self.send_response(503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_PUT = do_POST
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Down).serve_forever()
PY
trap 'kill $DOWN; [ -n "$KEEP" ] || rm -rf "$ROOT"' EXIT
until curl -s -o /dev/null http://127.0.0.1:$PORT/; do sleep 0.2; done
export HERMES_TIMEZONE=UTC HERMES_CRON_MAX_PARALLEL=0

# The seed home: one run whose delivery fails transiently and lands in the outbox.
SEED=$ROOT/seed; mkdir -p $SEED/scripts
cat > $SEED/.env <<EOT
MATTERMOST_URL=http://127.0.0.1:$PORT
MATTERMOST_TOKEN=benchtokenbenchtokenbench
EOT
python3 -c "import sys; open(sys.argv[1],'w').write(('All services healthy. ' * 1000)[:int(sys.argv[2])])" \
  $SEED/scripts/reply.txt ${REPLY_CHARS:-1000}
echo "cat reply.txt" > $SEED/scripts/r.sh
HERMES_HOME=$SEED $BIN cron add "every 1d" r --script r.sh --no-agent --deliver mattermost:town-square >/dev/null
python3 - $SEED/cron/jobs.json <<'PY'
import json,sys,datetime
p=sys.argv[1]; d=json.load(open(p))
for j in d["jobs"]: j["next_run_at"]=(datetime.datetime.now(datetime.timezone.utc)-datetime.timedelta(seconds=5)).isoformat()
json.dump(d,open(p,"w"),indent=2)
PY
HERMES_HOME=$SEED $BIN cron tick >/dev/null 2>&1
python3 - $SEED/cron/executions.db <<'PY'
import sqlite3,sys
rows=sqlite3.connect(sys.argv[1]).execute("SELECT state, length(payload) FROM outbox").fetchall()
if len(rows)!=1 or rows[0][0]!="pending":
    sys.exit(f"the seed run queued {rows}, not one pending delivery")
print(f"seed row: payload {rows[0][1]} bytes")
PY

# A copy of the seed home with n queued deliveries, due now or in a day.
fill() {
  local home=$1 n=$2 when=$3
  rm -rf $home; cp -r $SEED $home
  python3 - $home/cron/executions.db $n $when <<'PY'
import sqlite3,sys,datetime
db=sqlite3.connect(sys.argv[1]); n=int(sys.argv[2])
now=datetime.datetime.now(datetime.timezone.utc)
due=(now+(datetime.timedelta(days=1) if sys.argv[3]=="later" else -datetime.timedelta(seconds=5)))
stamp=lambda t: t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
cols=[r[1] for r in db.execute("PRAGMA table_info(outbox)") if r[1]!="id"]
seed=dict(zip(cols, db.execute(f"SELECT {','.join(cols)} FROM outbox").fetchone()))
db.execute("DELETE FROM outbox")
rows=[]
for i in range(n):
    r=dict(seed); r["occurrence"]=f"{seed['occurrence']}#{i:06d}"; r["next_attempt_at"]=stamp(due)
    rows.append(tuple(r[c] for c in cols))
db.executemany(f"INSERT INTO outbox ({','.join(cols)}) VALUES ({','.join('?'*len(cols))})", rows)
db.commit(); db.execute("PRAGMA wal_checkpoint(TRUNCATE)"); db.execute("VACUUM"); db.close()
PY
}

fill $ROOT/empty 0 later
BASE_SIZE=$(stat -c %s $ROOT/empty/cron/executions.db)
printf "%-8s %-7s %14s %14s %12s %10s\n" queued due db_bytes bytes_per_row peak_rss_kb wall_s
for n in $COUNTS; do
  for when in later now; do
    H=$ROOT/h$n-$when
    fill $H $n $when
    size=$(stat -c %s $H/cron/executions.db)
    per=$([ "$n" -gt 0 ] && echo $(( (size - BASE_SIZE) / n )) || echo -)
    START=$(date +%s.%N)
    HERMES_HOME=$H /usr/bin/time -o $H/rss -f %M $BIN cron tick >/dev/null 2>&1 || true
    rss=$(cat $H/rss)
    END=$(date +%s.%N)
    printf "%-8s %-7s %14s %14s %12s %10.2f\n" $n $when $size $per $rss $(echo "$END - $START" | bc)
  done
done

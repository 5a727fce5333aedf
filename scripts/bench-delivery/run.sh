#!/bin/bash
# Measures delivery throughput of the real binary against the limit-enforcing fake.
# usage: run.sh <scenario: one|twenty-jobs|twenty-chats|group> <binary>
set -e
SCEN=$1; BIN=${2:-"$(dirname "$0")/../../target/release/hermes"}
H=$(mktemp -d); PORT=$((20000 + RANDOM % 20000)); LOG=$H/fake.log
python3 "$(dirname "$0")/fake_telegram.py" $PORT $LOG & FAKE=$!
trap "kill $FAKE" EXIT
sleep 0.5
mkdir -p $H/scripts
export HERMES_HOME=$H HERMES_TIMEZONE=UTC HERMES_CRON_MAX_PARALLEL=0
cat > $H/.env <<EOT
TELEGRAM_BOT_TOKEN=123456789:AAbenchtokenbenchtokenbenchtoken12
TELEGRAM_API_BASE=http://127.0.0.1:$PORT
EOT
# A reply of N parts: N paragraphs of ~4000 chars each.
python3 - $H/scripts/reply.txt ${PARTS:-10} <<'PY'
import sys
n=int(sys.argv[2]); open(sys.argv[1],"w").write("\n\n".join(("p%02d "%i)+"x"*3990 for i in range(n)))
PY
echo "cat reply.txt" > $H/scripts/r.sh
case $SCEN in
  one)          $BIN cron add "every 1d" r --script r.sh --no-agent --deliver telegram:1001 >/dev/null ;;
  group)        $BIN cron add "every 1d" r --script r.sh --no-agent --deliver telegram:-1001 >/dev/null ;;
  twenty-chats) D=$(seq -s, -f "telegram:%g" 2001 2020); $BIN cron add "every 1d" r --script r.sh --no-agent --deliver "$D" >/dev/null ;;
  twenty-jobs)  for c in $(seq 3001 3020); do $BIN cron add "every 1d" r --script r.sh --no-agent --deliver telegram:$c >/dev/null; done ;;
esac
# Make every job due now, then one pass runs them all.
python3 - $H/cron/jobs.json <<'PY'
import json,sys,datetime
p=sys.argv[1]; d=json.load(open(p))
for j in d["jobs"]: j["next_run_at"]=(datetime.datetime.now(datetime.timezone.utc)-datetime.timedelta(seconds=5)).isoformat()
json.dump(d,open(p,"w"),indent=2)
PY
START=$(date +%s.%N)
$BIN cron tick >/dev/null 2>&1
END=$(date +%s.%N)
python3 - $LOG $START $END <<'PY'
import json,sys
rows=[json.loads(l) for l in open(sys.argv[1])]
ok=[r for r in rows if r["status"]==200]; lim=[r for r in rows if r["status"]==429]
span=ok[-1]["t"]-ok[0]["t"] if len(ok)>1 else 0
print(f"messages={len(ok)} chats={len(set(r['chat'] for r in ok))} 429s={len(lim)} "
      f"first->last={span:.2f}s rate={(len(ok)-1)/span if span else 0:.2f} msg/s "
      f"wall(tick)={float(sys.argv[3])-float(sys.argv[2]):.2f}s")
PY

#!/bin/bash
# Measures delivery throughput per platform of the real binary against
# fake_platforms.py, which enforces each platform's documented send limit.
# usage: platforms.sh <signal|matrix|mattermost|homeassistant|sms|whatsapp_cloud|dingtalk|feishu|
#                      whatsapp|bluebubbles|qqbot|wecom_callback>
#                     <one|twenty-chats> [binary]
# PARTS=N sets the parts per reply (default 20 for one chat, 3 for twenty chats).
set -e
PLATFORM=$1; SCEN=$2; BIN=${3:-"$(dirname "$0")/../../target/release/hermes"}
H=$(mktemp -d); PORT=$((20000 + RANDOM % 20000)); LOG=$H/fake.log
python3 "$(dirname "$0")/fake_platforms.py" $PORT $LOG & FAKE=$!
trap "kill $FAKE" EXIT
# Wait for the fake to listen (it starts slowly on a loaded machine).
until curl -s -o /dev/null http://127.0.0.1:$PORT/; do sleep 0.2; done
mkdir -p $H/scripts
export HERMES_HOME=$H HERMES_TIMEZONE=UTC HERMES_CRON_MAX_PARALLEL=0
BASE=http://127.0.0.1:$PORT
cat > $H/.env <<EOT
SIGNAL_HTTP_URL=$BASE
SIGNAL_ACCOUNT=+15550001111
MATRIX_HOMESERVER=$BASE
MATRIX_ACCESS_TOKEN=syt_benchtoken_benchtoken
MATTERMOST_URL=$BASE
MATTERMOST_TOKEN=benchtokenbenchtokenbench
HASS_URL=$BASE
HASS_TOKEN=benchtokenbenchtokenbench
SMS_API_BASE=$BASE
TWILIO_ACCOUNT_SID=AC0123456789abcdef0123456789abcdef
TWILIO_AUTH_TOKEN=benchtokenbenchtokenbench
TWILIO_PHONE_NUMBER=+15550002222
WHATSAPP_CLOUD_API_BASE=$BASE
WHATSAPP_CLOUD_PHONE_NUMBER_ID=106540352242922
WHATSAPP_CLOUD_ACCESS_TOKEN=benchtokenbenchtokenbench
DINGTALK_WEBHOOK_URL=$BASE/robot/send?access_token=benchtokenbenchtoken
FEISHU_API_BASE=$BASE
FEISHU_APP_ID=cli_bench
FEISHU_APP_SECRET=benchsecretbenchsecret
WHATSAPP_ENABLED=true
WHATSAPP_API_BASE=$BASE
BLUEBUBBLES_SERVER_URL=$BASE
BLUEBUBBLES_PASSWORD=benchpasswordbenchpassword
QQ_APP_ID=102074111
QQ_CLIENT_SECRET=benchsecretbenchsecret
QQBOT_API_BASE=$BASE
WECOM_CALLBACK_CORP_ID=ww8f4e2d1c0b9a7e6d
WECOM_CALLBACK_CORP_SECRET=benchsecretbenchsecret
WECOM_CALLBACK_AGENT_ID=1000002
WECOM_CALLBACK_API_BASE=$BASE
EOT
# One paragraph per part, each just under the platform's part size.
case $PLATFORM in
  signal) SIZE=7800 ;; matrix) SIZE=15800 ;; mattermost) SIZE=3800 ;;
  homeassistant|whatsapp_cloud) SIZE=3900 ;; sms) SIZE=1500 ;;
  dingtalk) SIZE=19800 ;; feishu) SIZE=7800 ;;
  whatsapp) SIZE=4000 ;; bluebubbles|qqbot) SIZE=3900 ;; wecom_callback) SIZE=2000 ;;
  *) echo "unknown platform $PLATFORM" >&2; exit 2 ;;
esac
case $SCEN in one) DEFAULT_PARTS=20 ;; *) DEFAULT_PARTS=3 ;; esac
python3 - $H/scripts/reply.txt ${PARTS:-$DEFAULT_PARTS} $SIZE <<'PY'
import sys
n, size = int(sys.argv[2]), int(sys.argv[3])
open(sys.argv[1], "w").write("\n\n".join(("p%02d " % i) + "x" * (size - 10) for i in range(n)))
PY
echo "cat reply.txt" > $H/scripts/r.sh
chat() {
  case $PLATFORM in
    signal|sms) echo "+1555700$(printf %04d $1)" ;; matrix) echo "!room$1:example.org" ;;
    mattermost) echo "channel$1" ;; homeassistant) echo "mobile_app_$1" ;;
    whatsapp_cloud) echo "1555700$(printf %04d $1)" ;; dingtalk) echo "group$1" ;;
    feishu) echo "oc_chat$1" ;;
    whatsapp) echo "1555700$(printf %04d $1)" ;; bluebubbles) echo "iMessage;-;+1555700$(printf %04d $1)" ;;
    qqbot) echo "63895$(printf %02d $1)" ;; wecom_callback) echo "member$1" ;;
  esac
}
case $SCEN in
  one) $BIN cron add "every 1d" r --script r.sh --no-agent --deliver "$PLATFORM:$(chat 1)" >/dev/null ;;
  twenty-chats) D=$(for c in $(seq 1 20); do printf "%s:%s," $PLATFORM "$(chat $c)"; done)
                $BIN cron add "every 1d" r --script r.sh --no-agent --deliver "${D%,}" >/dev/null ;;
  *) echo "unknown scenario $SCEN" >&2; exit 2 ;;
esac
python3 - $H/cron/jobs.json <<'PY'
import json,sys,datetime
p=sys.argv[1]; d=json.load(open(p))
for j in d["jobs"]: j["next_run_at"]=(datetime.datetime.now(datetime.timezone.utc)-datetime.timedelta(seconds=5)).isoformat()
json.dump(d,open(p,"w"),indent=2)
PY
START=$(date +%s.%N)
$BIN cron tick >/dev/null 2>&1
END=$(date +%s.%N)
python3 - $LOG $START $END $PLATFORM $SCEN <<'PY'
import json,sys
rows=[json.loads(l) for l in open(sys.argv[1])]
ok=[r for r in rows if r["status"] in (200, 201)]; lim=[r for r in rows if r["status"] not in (200, 201)]
span=ok[-1]["t"]-ok[0]["t"] if len(ok)>1 else 0
print(f"{sys.argv[4]} {sys.argv[5]}: messages={len(ok)} chats={len(set(r['chat'] for r in ok))} "
      f"refused={len(lim)} first->last={span:.2f}s rate={(len(ok)-1)/span if span else 0:.1f} msg/s "
      f"wall(tick)={float(sys.argv[3])-float(sys.argv[2]):.2f}s")
PY

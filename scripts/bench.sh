#!/usr/bin/env bash
# Every benchmark of docs/BENCHMARKS.md, in the order of that page: release build, the
# side-by-side run against Python Hermes, the criterion micro benches, croniter, the
# whole-process benches, delivery pacing. Each prints its own figures (criterion also
# keeps its last run under target/criterion/). About 45 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release
HERMES_BIN=target/release/hermes bash scripts/python-hermes/bench.sh
cargo bench -p schedules --bench next_fire
cargo bench -p jobs --bench store_and_due
bash scripts/croniter/bench.sh
cargo bench -p hermes --bench cli_list
cargo bench -p hermes --bench daemon   # HERMES_BENCH_IDLE_SECS=20 for a quick run (default 300)
# Delivery pacing against a fake Bot API that enforces Telegram's limits (429s counted).
for scenario in one twenty-chats twenty-jobs; do PARTS=3 bash scripts/bench-delivery/run.sh "$scenario"; done
PARTS=10 bash scripts/bench-delivery/run.sh one
PARTS=25 bash scripts/bench-delivery/run.sh group
# Render + split of a 20 kB reply per rendering; Discord pacing by its rate-limit headers.
cargo bench -p hermes --bench delivery
# Throughput per platform against fakes that enforce each platform's documented limit.
for platform in signal matrix mattermost sms whatsapp_cloud feishu homeassistant; do
    bash scripts/bench-delivery/platforms.sh "$platform" one
done
for platform in signal mattermost sms whatsapp_cloud feishu homeassistant; do
    bash scripts/bench-delivery/platforms.sh "$platform" twenty-chats
done
PARTS=1 bash scripts/bench-delivery/platforms.sh matrix twenty-chats
PARTS=60 bash scripts/bench-delivery/platforms.sh mattermost twenty-chats
PARTS=60 bash scripts/bench-delivery/platforms.sh whatsapp_cloud one
PARTS=25 bash scripts/bench-delivery/platforms.sh dingtalk one

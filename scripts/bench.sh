#!/usr/bin/env bash
# Release build, then both benchmarks; they print their figures and store nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release
cargo bench -p schedules --bench next_fire
cargo bench -p hermes --bench cli_list
cargo bench -p hermes --bench daemon   # HERMES_BENCH_IDLE_SECS=20 for a quick run (default 300)
# Delivery pacing against a fake Bot API that enforces Telegram's limits (429s counted).
for scenario in one twenty-chats twenty-jobs; do PARTS=3 bash scripts/bench-delivery/run.sh "$scenario"; done

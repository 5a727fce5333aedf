#!/usr/bin/env bash
# Ratio bench: N next-fire computations per case in croniter (in-process loop,
# tz-aware starts) and in our engine (release example, timing only the calls), on the
# same expressions, zones and starts. Prints a Markdown table with both ratios.
# Each side runs 3 alternating rounds and keeps its best (a shared 2-core machine is noisy).
# Usage: scripts/croniter/bench.sh [N] [--rounds R]   (default 20,000 per case, 3 rounds)
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="$(bash scripts/croniter/setup.sh)"
cargo build --quiet --release -p schedules --example croniter_diff
PYTHONTZPATH="" exec "$PY" scripts/croniter/crondiff.py bench "${@}"

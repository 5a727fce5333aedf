#!/usr/bin/env bash
# Regenerates tests/fixtures/croniter/subset.jsonl: ~2,000 triples with croniter's
# answers (and, for the documented DST differences, their class and the Vixie answer),
# read by schedules/tests/croniter_subset.rs without Python.
# Usage: scripts/croniter/make_subset.sh [N] [--seed S]
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="$(bash scripts/croniter/setup.sh)"
cargo build --quiet --release -p schedules --example croniter_diff
N="${1:-2000}"
shift || true
PYTHONTZPATH="" exec "$PY" scripts/croniter/crondiff.py subset "$N" tests/fixtures/croniter/subset.jsonl "$@"

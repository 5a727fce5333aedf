#!/usr/bin/env bash
# Differential check of our next-fire engine against croniter (Python Hermes' engine)
# over N random (expression, instant, zone) triples, default 100,000. Prints the count
# of every class of disagreement with examples; exits 1 if any is unclassified.
# Usage: scripts/croniter/diff.sh [N] [--seed S]
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="$(bash scripts/croniter/setup.sh)"
cargo build --quiet --release -p schedules --example croniter_diff
# zoneinfo reads the venv's tzdata package, not the system's zone files, so the run does
# not depend on the machine's tzdata; the example reports offsets to catch a mismatch.
PYTHONTZPATH="" exec "$PY" scripts/croniter/crondiff.py diff "${@:-100000}"

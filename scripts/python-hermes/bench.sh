#!/usr/bin/env bash
# Side-by-side whole-process figures against Python Hermes (hermes-agent 0.19.0 from PyPI),
# measured in the same run on the same generated jobs.json (one HERMES_HOME per side):
#   1. `hermes cron list --all` at 1,000 and 10,000 jobs (median of --runs);
#   2. one scheduler pass (`hermes cron tick`) at 100/1,000/10,000/100,000 jobs, nothing
#      due and 1 % due (silent `--no-agent` script jobs: no LLM on either side), checked to
#      have advanced exactly the due jobs on both sides;
#   3. fire lateness of the daemons (ours: `hermes cron daemon`; Python: `hermes gateway run`);
#   4. idle daemons on 1,000 recurring jobs none due: RSS and CPU of the process tree over
#      --idle-secs after a settle period, and whether jobs.json was rewritten;
#   5. burst: --burst-jobs agent jobs due at once, one `hermes cron tick` each against a
#      local fake OpenAI-compatible model answering in 1 s, 64 in parallel on both sides:
#      wall, CPU per job, every job checked ok, one model request per job checked.
# Prints Markdown tables on stdout, progress on stderr. About 25 minutes with the defaults
# on 2 cores (Python's 1 %-due pass at 100,000 jobs runs into --timeout).
#
# Usage: scripts/python-hermes/bench.sh [--only list,tick,lateness,idle,burst]
#          [--list-sizes 1000,10000] [--tick-sizes 100,1000,10000,100000] [--runs 5]
#          [--tick-runs 3] [--due-runs 3] [--timeout S (default 300; 900 for burst)]
#          [--lateness-jobs 200] [--lateness-rate 2] [--idle-jobs 1000] [--idle-settle 10]
#          [--idle-secs 120] [--burst-jobs 1000] [--burst-parallel 64] [--burst-delay 1]
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

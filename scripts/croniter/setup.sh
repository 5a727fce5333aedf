#!/usr/bin/env bash
# Creates (or reuses) the Python virtualenv holding croniter, the cron engine Python
# Hermes uses, for the differential check and the ratio bench. The venv lives outside
# the clone so `git status` stays clean; prints the venv's python path on stdout.
set -euo pipefail
VENV="${CRONITER_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/hermes-cron/croniter-venv}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
    mkdir -p "$(dirname "$VENV")"
    "$PY" -m venv "$VENV" >&2
fi
# croniter needs python-dateutil (pulled in by pip) and an IANA database for zoneinfo;
# tzdata makes the zone data the venv's own instead of the system's.
if ! "$VENV/bin/python" -c 'import croniter, tzdata, pytz' 2>/dev/null; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        croniter tzdata pytz >&2
fi
"$VENV/bin/python" - >&2 <<'PY'
import importlib.metadata as m
print("croniter", m.version("croniter"), "| tzdata", m.version("tzdata"),
      "| python-dateutil", m.version("python-dateutil"))
PY
echo "$VENV/bin/python"

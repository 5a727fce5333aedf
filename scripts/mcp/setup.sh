#!/usr/bin/env bash
# Creates (or reuses) the Python virtualenv that runs the MCP test servers of the
# black-box tests and the benchmark (tests/fixtures/mcp/*.py): the official MCP Python
# SDK from PyPI, pinned to the version Python Hermes 0.19 pins. The venv lives outside
# the clone so `git status` stays clean; it is rebuilt when the pin changes. Prints the
# venv's python path on stdout. Needs python3 >= 3.10 and PyPI access.
# .ci/run calls it before the tests; the tests call it themselves when the venv is
# missing (tests/cli/mcp.rs), so `cargo test` works on a fresh machine too: several at
# once, one building under a lock (scripts/venv.sh), the others waiting for it.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
MCP_VERSION="${MCP_VERSION:-1.26.0}"
VENV="${HERMES_MCP_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/hermes-cron/mcp-venv}"
PY="${PYTHON:-python3}"
# shellcheck source=../venv.sh
. "$HERE/../venv.sh"

ready() {
    [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/.mcp-version" 2>/dev/null)" = "$MCP_VERSION" ] \
        && "$VENV/bin/python" -c 'import mcp.server.fastmcp' 2>/dev/null
}

build() {
    "$1/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_VERSION" >&2
    "$1/bin/python" -c 'import mcp.server.fastmcp' >&2
    echo "$MCP_VERSION" > "$1/.mcp-version"
}

if ! ready; then
    if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info[:2] >= (3, 10) else 1)'; then
        echo "scripts/mcp/setup.sh: the MCP Python SDK needs Python 3.10 or newer; set PYTHON=" >&2
        exit 1
    fi
    venv_build "$VENV" ready build "mcp==$MCP_VERSION"
fi
echo "$VENV/bin/python"

#!/usr/bin/env bash
# The test command of the README: installs what the tests need when it is missing (the
# PostgreSQL server for the store tests, which start a throwaway cluster of their own;
# faketime for the slow failover tests), then runs every test of the workspace.
# Extra arguments go to `cargo test` (e.g. `-- --ignored postgres::` for the slow ones).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || ! command -v faketime >/dev/null; then
    SUDO=()
    [ "$(id -u)" = 0 ] || SUDO=(sudo)
    echo "test.sh: installing postgresql and faketime (Debian packages)" >&2
    "${SUDO[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq postgresql faketime >/dev/null
fi
exec cargo test --workspace "$@"

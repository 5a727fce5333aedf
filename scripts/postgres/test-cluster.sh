#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: initdb into a fresh directory (as the
# postgres user when run as root: initdb refuses root), listening only on a Unix socket
# in that directory, stopped and removed as soon as process WATCH_PID exits. Prints the
# URL of its `postgres` database. Usage: test-cluster.sh WATCH_PID
set -euo pipefail
WATCH="${1:?usage: test-cluster.sh WATCH_PID}"
BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
if [ -z "$BIN" ] || [ ! -x "$BIN/initdb" ]; then
    echo "test-cluster.sh: no PostgreSQL server found; install it: apt-get install postgresql" >&2
    exit 1
fi
DIR="$(mktemp -d /tmp/hermes-pg.XXXXXX)"
chmod 755 "$DIR"
AS=()
if [ "$(id -u)" = 0 ]; then
    chown postgres "$DIR"
    AS=(runuser -u postgres --)
fi
"${AS[@]}" "$BIN/initdb" -D "$DIR/data" -A trust -U postgres --no-sync >"$DIR/initdb.log" 2>&1
"${AS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w \
    -o "-k $DIR -c listen_addresses= -c fsync=off -c synchronous_commit=off -c max_connections=300" \
    start >/dev/null
# The reaper: the cluster lives exactly as long as the process that asked for it.
(
    while kill -0 "$WATCH" 2>/dev/null; do sleep 1; done
    "${AS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$DIR"
) </dev/null >/dev/null 2>&1 &
disown
echo "postgresql://postgres@/postgres?host=$DIR"

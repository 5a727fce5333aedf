#!/usr/bin/env bash
# A throwaway primary/standby pair of PostgreSQL servers in streaming replication, for
# the failover tests: the primary is made with initdb, the standby with pg_basebackup
# from it (-R: it follows the primary). Each listens only on a Unix socket in its own
# directory, on the same port number. Both are stopped and removed as soon as process
# WATCH_PID exits.
#
# Usage: replica-pair.sh WATCH_PID [sync|async]
#   sync  (the default): the primary waits for the standby to confirm each commit
#         (synchronous_standby_names = the standby, synchronous_commit = on);
#   async: it does not (PostgreSQL's default, and most managed databases').
#
# Prints three lines: the libpq multi-host URL of the pair's `postgres` database with
# target_session_attrs=read-write (a client connects to whichever server accepts
# writes), the primary's directory and the standby's. In each directory, `data` is the
# server's data directory and `server.log` its log; the caller kills the primary with
# `pg_ctl -D DIR/data -m immediate stop` and promotes the standby with
# `pg_ctl -D DIR/data promote` (as the postgres user when run as root).
set -euo pipefail
WATCH="${1:?usage: replica-pair.sh WATCH_PID [sync|async]}"
MODE="${2:-sync}"
case "$MODE" in
sync | async) ;;
*)
    echo "replica-pair.sh: mode '$MODE' is not one: use sync or async" >&2
    exit 2
    ;;
esac
BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
if [ -z "$BIN" ] || [ ! -x "$BIN/initdb" ] || [ ! -x "$BIN/pg_basebackup" ]; then
    echo "replica-pair.sh: no PostgreSQL server found; install it: apt-get install postgresql" >&2
    exit 1
fi
PRIMARY="$(mktemp -d /tmp/hermes-pg-primary.XXXXXX)"
STANDBY="$(mktemp -d /tmp/hermes-pg-standby.XXXXXX)"
chmod 755 "$PRIMARY" "$STANDBY"
AS=()
if [ "$(id -u)" = 0 ]; then
    chown postgres "$PRIMARY" "$STANDBY"
    AS=(runuser -u postgres --)
fi
# Removes both (their servers stopped) when WATCH exits, or now if setting up fails.
reap() {
    for dir in "$PRIMARY" "$STANDBY"; do
        "${AS[@]}" "$BIN/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
        rm -rf "$dir"
    done
}
trap 'reap' ERR
"${AS[@]}" "$BIN/initdb" -D "$PRIMARY/data" -A trust -U postgres --no-sync >"$PRIMARY/initdb.log" 2>&1
cat >>"$PRIMARY/data/pg_hba.conf" <<'HBA'
local   replication  all  trust
HBA
SYNC=()
if [ "$MODE" = sync ]; then
    SYNC=(-c "synchronous_standby_names=standby" -c synchronous_commit=on)
fi
COMMON=(-c listen_addresses= -c port=5432 -c fsync=off -c max_connections=200
    -c wal_level=replica -c max_wal_senders=4 -c hot_standby=on)
"${AS[@]}" "$BIN/pg_ctl" -D "$PRIMARY/data" -l "$PRIMARY/server.log" -w \
    -o "-k $PRIMARY ${COMMON[*]} ${SYNC[*]}" start >/dev/null
"${AS[@]}" "$BIN/pg_basebackup" -h "$PRIMARY" -p 5432 -U postgres -D "$STANDBY/data" \
    -R -X stream --no-sync >"$STANDBY/basebackup.log" 2>&1
# -R wrote primary_conninfo; name the standby so synchronous_standby_names finds it.
echo "primary_conninfo = 'host=$PRIMARY port=5432 user=postgres application_name=standby'" \
    >>"$STANDBY/data/postgresql.auto.conf"
"${AS[@]}" "$BIN/pg_ctl" -D "$STANDBY/data" -l "$STANDBY/server.log" -w \
    -o "-k $STANDBY ${COMMON[*]}" start >/dev/null
# Wait until the standby streams (and, when sync, is the synchronous one): a commit made
# before that would not be on it.
WANT="streaming"
for _ in $(seq 1 100); do
    STATE="$("${AS[@]}" psql -h "$PRIMARY" -p 5432 -U postgres -Atc \
        "SELECT state || ' ' || sync_state FROM pg_stat_replication WHERE application_name = 'standby'" \
        2>/dev/null || true)"
    case "$MODE:$STATE" in
    "sync:streaming sync" | "async:streaming async") WANT="" && break ;;
    esac
    sleep 0.1
done
if [ -n "$WANT" ]; then
    echo "replica-pair.sh: the standby did not start streaming; see $STANDBY/server.log" >&2
    reap
    exit 1
fi
trap - ERR
(
    while kill -0 "$WATCH" 2>/dev/null; do sleep 1; done
    reap
) </dev/null >/dev/null 2>&1 &
disown
echo "postgresql://postgres@/postgres?host=$PRIMARY,$STANDBY&port=5432&target_session_attrs=read-write"
echo "$PRIMARY"
echo "$STANDBY"

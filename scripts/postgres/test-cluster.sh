#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: initdb into a fresh directory (as the
# postgres user when run as root: initdb refuses root), listening only on a Unix socket
# in that directory, stopped and removed as soon as process WATCH_PID exits. Prints the
# URL of its `postgres` database. Usage: test-cluster.sh WATCH_PID [--tls PORT]
#
# With --tls it also listens on 127.0.0.1:PORT with ssl=on, and pg_hba.conf takes TCP
# connections over TLS only (hostssl; the user `certuser` only with a client certificate).
# The certificates are made here with openssl, in $DIR/tls: ca.crt (the CA that signed the
# server's certificate, for localhost and 127.0.0.1), other-ca.crt (an unrelated CA) and
# client.crt/client.key (CN certuser). A second line gives that directory.
set -euo pipefail
WATCH="${1:?usage: test-cluster.sh WATCH_PID [--tls PORT]}"
TLS_PORT=""
if [ "${2:-}" = "--tls" ]; then
    TLS_PORT="${3:?usage: test-cluster.sh WATCH_PID --tls PORT}"
fi
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
LISTEN=(-c listen_addresses=)
if [ -n "$TLS_PORT" ]; then
    T="$DIR/tls"
    mkdir -p "$T"
    quiet() { "$@" >>"$T/openssl.log" 2>&1; }
    for ca in ca other-ca; do
        quiet openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=hermes test $ca" \
            -keyout "$T/$ca.key" -out "$T/$ca.crt"
    done
    quiet openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
        -keyout "$T/server.key" -out "$T/server.csr"
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$T/server.ext"
    quiet openssl x509 -req -in "$T/server.csr" -CA "$T/ca.crt" -CAkey "$T/ca.key" \
        -CAcreateserial -days 2 -extfile "$T/server.ext" -out "$T/server.crt"
    quiet openssl req -newkey rsa:2048 -nodes -subj "/CN=certuser" \
        -keyout "$T/client.key" -out "$T/client.csr"
    printf 'extendedKeyUsage=clientAuth\n' >"$T/client.ext"
    quiet openssl x509 -req -in "$T/client.csr" -CA "$T/ca.crt" -CAkey "$T/ca.key" \
        -CAcreateserial -days 2 -extfile "$T/client.ext" -out "$T/client.crt"
    chmod 600 "$T"/*.key
    for f in server.crt server.key ca.crt; do
        cp "$T/$f" "$DIR/data/$f"
    done
    chmod 600 "$DIR/data/server.key"
    [ "$(id -u)" = 0 ] && chown postgres "$DIR/data/server.crt" "$DIR/data/server.key" "$DIR/data/ca.crt"
    cat >"$DIR/data/pg_hba.conf" <<HBA
local   all  all                    trust
hostssl all  certuser  127.0.0.1/32 cert
hostssl all  all       127.0.0.1/32 trust
HBA
    LISTEN=(-c listen_addresses=127.0.0.1 -c port="$TLS_PORT" -c ssl=on -c ssl_ca_file=ca.crt)
fi
"${AS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w \
    -o "-k $DIR ${LISTEN[*]} -c fsync=off -c synchronous_commit=off -c max_connections=300" \
    start >/dev/null
# The reaper: the cluster lives exactly as long as the process that asked for it.
(
    while kill -0 "$WATCH" 2>/dev/null; do sleep 1; done
    "${AS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$DIR"
) </dev/null >/dev/null 2>&1 &
disown
if [ -n "$TLS_PORT" ]; then
    echo "postgresql://postgres@/postgres?host=$DIR&port=$TLS_PORT"
    echo "$DIR/tls"
else
    echo "postgresql://postgres@/postgres?host=$DIR"
fi

# tests/pg.sh -- a throwaway PostgreSQL cluster for the shared-store tests
# (sourced, never run): Debian's postgresql server binaries, a cluster in a
# temporary directory, a Unix socket there and no TCP port, trust
# authentication for the socket only, stopped and removed by pg_stop.
# initdb refuses to run as root: as root the cluster runs as the
# unprivileged user Debian's package creates (postgres), else nobody.
#
#   pg_find             sets PGBIN (empty when no server is installed)
#   pg_start            initdb + pg_ctl start in a new directory under
#                       /tmp (short: a socket path has a length limit; open
#                       to the cluster's user); sets PG_DIR and PG_URL
#   pg_restart          pg_ctl restart -m fast (the database restarted)
#   pg_down, pg_up      stop it (fast), start it again (the same cluster)
#   pg_stop             pg_ctl stop -m immediate, and PG_DIR removed
#   pg_sql SQL          one statement through psql, unaligned, no header
pg_find() {
    PGBIN=""
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -r) $(dirname "$(command -v initdb 2>/dev/null || echo /x/x)"); do
        if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then PGBIN=$d; return 0; fi
    done
    return 1
}
pg_as() {
    if [ "$(id -u)" -eq 0 ]; then
        local u=postgres
        id "$u" >/dev/null 2>&1 || u=nobody
        runuser -u "$u" -- "$@"
    else
        "$@"
    fi
}
pg_start() {
    PG_DIR=$(mktemp -d /tmp/mfud-pg.XXXXXX) || return 1
    if [ "$(id -u)" -eq 0 ]; then
        if id postgres >/dev/null 2>&1; then chown postgres "$PG_DIR"; else chown nobody "$PG_DIR"; fi
    fi
    pg_as "$PGBIN/initdb" -D "$PG_DIR/data" -U mfud --auth=trust -E UTF8 --no-sync >"$PG_DIR/initdb.log" 2>&1 || return 1
    pg_as "$PGBIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 30 \
        -o "-c listen_addresses='' -k $PG_DIR -c fsync=off -c max_connections=200" start >/dev/null 2>&1 || return 1
    PG_URL="postgresql:///postgres?host=$PG_DIR&user=mfud"
    export PG_URL PG_DIR
}
pg_restart() {
    pg_as "$PGBIN/pg_ctl" -D "$PG_DIR/data" -w -t 30 -m fast restart \
        -o "-c listen_addresses='' -k $PG_DIR -c fsync=off -c max_connections=200" >/dev/null 2>&1
}
pg_down() {
    pg_as "$PGBIN/pg_ctl" -D "$PG_DIR/data" -w -t 30 -m fast stop >/dev/null 2>&1
}
pg_up() {
    pg_as "$PGBIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 30 \
        -o "-c listen_addresses='' -k $PG_DIR -c fsync=off -c max_connections=200" start >/dev/null 2>&1
}
pg_stop() {
    [ -n "${PG_DIR:-}" ] || return 0
    pg_as "$PGBIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1
    rm -rf "$PG_DIR"
    PG_DIR=""
}
pg_sql() {
    psql -X -q -A -t -h "$PG_DIR" -U mfud -d postgres -c "$1"
}

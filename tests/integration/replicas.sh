#!/bin/sh
# tests/integration/replicas.sh -- issue 17: three mfud replicas on one
# PostgreSQL database (docs/storage.md). A throwaway cluster (tests/pg.sh),
# three daemons on it, and a burst of distinct and identical searches
# spread over them (tests/integration/replicas_burst.py) during which one
# replica is killed with -9 and the database is restarted. Checks: every
# acknowledged job completes; each distinct search ran to a stored outcome
# exactly once (runs = 1 in its row, none twice); results and the listing
# readable from every live replica; the dead replica's jobs taken over
# (failovers); /readyz back to 200 after the restart. The database then
# stopped for a while: /readyz 503 and new searches 503 (not acknowledged),
# both back within seconds of its return. Also: the schema
# migrated once when the three started together, and a second start finds
# it current. Prints the numbers. Without a PostgreSQL server, or with an
# mfud built without libpq, it says SKIPPED.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh
. tests/pg.sh
PIDS=""
cleanup_all() {
    for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
    pg_stop
    cleanup
}
trap cleanup_all EXIT
if ! pg_find; then
    skip "replicas (no PostgreSQL server installed: Debian's postgresql)"
    finish
fi
if ! command -v psql >/dev/null 2>&1; then
    skip "replicas (no psql client)"
    finish
fi
if ! pg_start; then
    bad "a throwaway PostgreSQL cluster did not start"
    cat "$PG_DIR"/*.log 2>/dev/null | tail -20
    finish
fi
# an mfud without libpq says so at once: skip, visibly
if $MFUD --port 0 --db "postgresql:///nothing?host=/nonexistent" --db-wait 0 2>&1 | grep -q "built without PostgreSQL"; then
    skip "replicas (this mfud was built without libpq: install libpq-dev and rebuild)"
    finish
fi

# Three replicas started together (the schema migrates once, under the
# advisory lock); jobs held 300 ms each so the burst finds them in flight,
# 5 s on replica 2, so that it surely holds jobs when it is killed.
PORTS=""
for i in 1 2 3; do
    delay=300
    [ "$i" = 2 ] && delay=5000
    MFUD_TEST_JOB_DELAY_MS=$delay $MFUD --port 0 --db "$PG_URL" --workers 2 --wait 0 --log-level info \
        >"$T/r$i.log" 2>&1 &
    PIDS="$PIDS $!"
    eval "PID$i=$!"
done
for i in 1 2 3; do
    PID=$(eval echo "\$PID$i")
    wait_port "$T/r$i.log" 20
    [ -n "$PORT" ] || { bad "replica $i did not start"; tail -5 "$T/r$i.log"; finish; }
    PORTS="$PORTS $PORT"
done
PID=""
check "schema at version 1 after three replicas started together" \
    [ "$(pg_sql 'SELECT version FROM mfud_schema')" = 1 ]
check "one schema row (migrated once)" [ "$(pg_sql 'SELECT count(*) FROM mfud_schema')" = 1 ]

# the burst; the driver kills replica 2 and restarts the database midway
python3 tests/integration/replicas_burst.py "$T" "$PID2" $PORTS >"$T/burst.out" 2>&1 &
DRIVER=$!
# the driver writes "restart" when it wants the database restarted
for _ in $(seq 1 600); do
    [ -f "$T/restart" ] && break
    kill -0 $DRIVER 2>/dev/null || break
    sleep 0.1
done
if [ -f "$T/restart" ]; then
    if pg_restart; then touch "$T/restarted"; else touch "$T/restart_failed"; fi
fi
wait $DRIVER
drc=$?
cat "$T/burst.out"
check "the burst driver's checks passed" [ "$drc" -eq 0 ]
# what the store says, independently of the daemons
twice=$(pg_sql "SELECT count(*) FROM results WHERE runs > 1")
once=$(pg_sql "SELECT count(*) FROM results WHERE runs = 1 AND status = 'done'")
distinct=$(cat "$T/distinct" 2>/dev/null || echo -1)
claimed_again=$(pg_sql "SELECT count(*) FROM results WHERE attempts > 1")
echo "REPORT: replicas: store: distinct searches=$distinct run (outcome stored) once=$once run twice=$twice taken over (claimed again)=$claimed_again"
check "no job's outcome stored twice (run twice = 0)" [ "$twice" = 0 ]
check "every distinct search stored exactly once" [ "$once" = "$distinct" ]
check "the killed replica's jobs were claimed again" [ "$claimed_again" -ge 1 ]
# the database down for a while: not ready, new searches 503 (not
# acknowledged), and back once it is up again
B1=http://127.0.0.1:$(echo $PORTS | cut -d' ' -f1)
pg_down
sleep 2
code=$(curl -s -o "$T/ready_down" -w '%{http_code}' "$B1/readyz")
check "/readyz 503 while the database is down" [ "$code" = 503 ]
check "/readyz says the database cannot be reached" grep -q "cannot be reached" "$T/ready_down"
body='{"model": {"preset": "llama3-8b"}, "hardware": {"preset": "h100-sxm"}, "devices": 512, "training": {"seq_len": 4096, "global_batch_tokens": 1048576}}'
code=$(curl -s -o "$T/post_down" -w '%{http_code}' -H 'Content-Type: application/json' -H 'Prefer: respond-async' -d "$body" "$B1/search")
check "a new search is 503 while the database is down (got $code: $(head -c 200 "$T/post_down"))" [ "$code" = 503 ]
pg_up
code=000
for _ in $(seq 1 100); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$B1/readyz")
    [ "$code" = 200 ] && break
    sleep 0.1
done
check "/readyz 200 within 10 s of the database coming back" [ "$code" = 200 ]
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -H 'Prefer: respond-async' -d "$body" "$B1/search")
check "the same search is acknowledged once the database is back (got $code)" sh -c "[ $code = 202 ] || [ $code = 200 ]"
# a calibrated profile stored through one replica is named through another
B2=http://127.0.0.1:$(echo $PORTS | cut -d' ' -f3) # replica 3: the driver killed replica 2
curl -s -o "$T/cal.json" -H 'Content-Type: application/json' --data-binary @examples/calibration.json "$B1/calibrate"
pid_id=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['profile']['id'])" "$T/cal.json" 2>/dev/null)
code=$(curl -s -o /dev/null -w '%{http_code}' "$B2/profiles/$pid_id")
check_sh "a profile POST /calibrate stored on one replica: GET /profiles/{id} on another 200 (got $code)" \
    '[ -n "$1" ] && [ "$2" = 200 ]' "$pid_id" "$code"
body2="{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"profile\": \"$pid_id\"}, \"devices\": 8, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}}"
code=$(curl -s -o "$T/prof_search" -w '%{http_code}' -H 'Content-Type: application/json' -H 'Prefer: respond-async' -d "$body2" "$B2/search")
check "... and a search there names it (got $code: $(head -c 200 "$T/prof_search"))" sh -c "[ $code = 202 ] || [ $code = 200 ]"
for p in $PIDS; do kill -0 "$p" 2>/dev/null && kill -TERM "$p"; done
sleep 1
# a second start finds the schema current and migrates nothing
MFUD_TEST_JOB_DELAY_MS=0 $MFUD --port 0 --db "$PG_URL" >"$T/r4.log" 2>&1 &
PID=$!
PIDS="$PIDS $PID"
wait_port "$T/r4.log" 20
check "a fourth replica starts on the migrated schema" [ -n "$PORT" ]
check "/readyz names the backend" sh -c "curl -s $BASE/readyz | grep -q postgresql"
# started while the database is down (an orchestrator brings both up at
# once): a replica keeps trying for --db-wait seconds and serves once the
# database is up; if it stays down, the replica exits saying so
kill -TERM "$PID" 2>/dev/null
sleep 1
pg_down
$MFUD --port 0 --db "$PG_URL" --db-wait 1 >"$T/r5.log" 2>&1
rc=$?
check "a replica whose database stays down exits after --db-wait 1 (rc $rc)" [ "$rc" -ne 0 ]
check "... saying it could not open the database after waiting" \
    sh -c "grep -q 'cannot open the database' '$T/r5.log' && grep -q 'waited_s=1\.' '$T/r5.log'"
$MFUD --port 0 --db "$PG_URL" --db-wait 30 >"$T/r6.log" 2>&1 &
PID=$!
PIDS="$PIDS $PID"
sleep 1
check "a replica started while the database is down is waiting, not gone" kill -0 "$PID"
pg_up
wait_port "$T/r6.log" 30
check "it listens once the database is up" [ -n "$PORT" ]
check "... ready (/readyz 200)" sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' $BASE/readyz)\" = 200 ]"
check "... and its log says it retried" grep -q "database not reachable, retrying" "$T/r6.log"
# what waiting cannot fix fails at once: a schema newer than this mfud
kill -TERM "$PID" 2>/dev/null
sleep 1
pg_sql "UPDATE mfud_schema SET version = version + 100" >/dev/null
t0=$(date +%s)
$MFUD --port 0 --db "$PG_URL" --db-wait 30 >"$T/r7.log" 2>&1
rc=$?
t1=$(date +%s)
pg_sql "UPDATE mfud_schema SET version = version - 100" >/dev/null
check "a newer schema: exits at once, not after --db-wait 30 (rc $rc, $((t1 - t0)) s)" \
    sh -c "[ $rc -ne 0 ] && [ $((t1 - t0)) -lt 10 ] && ! grep -q retrying '$T/r7.log'"
finish

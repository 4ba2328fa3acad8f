"""tests/integration/replicas_burst.py -- the burst of tests/integration/replicas.sh.

argv: scratch dir, the pid of the replica to kill, then the three ports.
Sends DISTINCT distinct searches, each to one replica in turn, and each
identical search again to the other two (a cache key is unique: the second
and third copies must not start a job). A client retries a 503 (the
database restarting: not acknowledged) as a real client does. After a third
of the burst it kills replica 2 with -9; after two thirds it asks the shell
for a database restart (the file "restart") and goes on sending meanwhile.
Then every acknowledged job must complete, readable from every live
replica. Prints the numbers and exits 1 on a failed check.
"""
import json
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request

T, KILL_PID, PORTS = sys.argv[1], int(sys.argv[2]), [int(p) for p in sys.argv[3:]]
DISTINCT = 30
fails = []


def req(port, method, path, body=None, timeout=10):
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data, method=method)
    if data is not None:
        r.add_header("Content-Type", "application/json")
        r.add_header("Prefer", "respond-async")
    try:
        with urllib.request.urlopen(r, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read() or b"null")
        except ValueError:
            return e.code, None
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return 0, None


def body(k):
    # distinct by device count and sequence length: small, quick searches
    return {"model": {"preset": "llama3-8b"}, "hardware": {"preset": "h100-sxm"},
            "devices": 8 * (1 + k % 10), "training": {"seq_len": [2048, 4096, 8192][k // 10 % 3],
                                                      "global_batch_tokens": 1048576},
            "search": {"top_k": 3}}


dead = set()
acked = {}          # id -> first replica that acknowledged it
lock = threading.Lock()
answers = {"200": 0, "202": 0, "503_retried": 0, "refused": 0}


def post(k, port):
    for attempt in range(60):
        if port in dead:
            return
        code, doc = req(port, "POST", "/search", body(k))
        if code in (200, 202) and doc and "id" in doc:
            with lock:
                answers[str(code)] += 1
                acked.setdefault(doc["id"], port)
            return
        if code == 503 or code == 0:
            with lock:
                answers["503_retried" if code == 503 else "refused"] += 1
            time.sleep(0.25)
            continue
        fails.append("POST %d to %d: %s %s" % (k, port, code, doc))
        return


threads = []
for k in range(DISTINCT):
    home = k % 3
    for j in range(3):  # the search, then the same search at the two others
        port = PORTS[(home + j) % 3]
        t = threading.Thread(target=post, args=(k, port))
        t.start()
        threads.append(t)
    time.sleep(0.05)
    if k == DISTINCT // 3:
        os.kill(KILL_PID, signal.SIGKILL)
        dead.add(PORTS[1])
    if k == 2 * DISTINCT // 3:
        open(os.path.join(T, "restart"), "w").close()
for t in threads:
    t.join()
live = [p for p in PORTS if p not in dead]
# the database restart done, the live replicas ready again
deadline = time.time() + 60
while time.time() < deadline and not os.path.exists(os.path.join(T, "restarted")):
    time.sleep(0.1)
if not os.path.exists(os.path.join(T, "restarted")):
    fails.append("the database restart did not happen")
ready = False
while time.time() < deadline:
    if all(req(p, "GET", "/readyz")[0] == 200 for p in live):
        ready = True
        break
    time.sleep(0.2)
if not ready:
    fails.append("/readyz not 200 on every live replica after the database restart")

# every acknowledged job completes, each read from every live replica
pending = set(acked)
deadline = time.time() + 90
while pending and time.time() < deadline:
    for i in list(pending):
        code, doc = req(live[len(pending) % len(live)], "GET", "/results/" + i)
        if code == 200 and doc and doc.get("status") in ("done", "failed"):
            pending.discard(i)
    time.sleep(0.2)
lost = len(pending)
unreadable = 0
for i in acked:
    for p in live:
        code, doc = req(p, "GET", "/results/" + i)
        if code != 200 or not doc or doc.get("status") != "done":
            unreadable += 1
listed = set()
code, doc = req(live[0], "GET", "/results?limit=100")
if code == 200 and doc:
    listed = {it["id"] for it in doc.get("items", [])}
failovers = 0
for p in live:
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % p, timeout=10) as resp:
            for line in resp.read().decode().splitlines():
                if line.startswith("mfud_jobs_failovers_total "):
                    failovers += int(float(line.split()[1]))
    except OSError:
        fails.append("no /metrics from %d" % p)
with open(os.path.join(T, "distinct"), "w") as f:
    f.write(str(len(acked)))

print("REPORT: replicas: acknowledged=%d (distinct ids) answers 200=%d 202=%d 503-retried=%d refused=%d "
      "lost=%d unreadable=%d failovers=%d listed=%d db_restarts=1 killed=1"
      % (len(acked), answers["200"], answers["202"], answers["503_retried"], answers["refused"],
         lost, unreadable, failovers, len(set(acked) & listed)))
if len(acked) != DISTINCT:
    fails.append("acknowledged %d distinct searches of %d" % (len(acked), DISTINCT))
if lost:
    fails.append("%d acknowledged jobs never completed" % lost)
if unreadable:
    fails.append("%d reads of a done result failed on some live replica" % unreadable)
if failovers < 1:
    fails.append("no job was taken over from the killed replica")
if len(set(acked) & listed) != len(acked):
    fails.append("the listing of one replica lacks jobs the others accepted")
for f in fails:
    print("FAIL: " + f)
sys.exit(1 if fails else 0)

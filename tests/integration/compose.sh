#!/bin/sh
# tests/integration/compose.sh -- docker/compose.yaml and docker/nginx.conf
# checked as far as a machine without a Docker engine can (issue 17): the
# YAML parses (the yaml package pinned in tools/lint), three mfud services
# built from the repository's Dockerfile, each on a postgresql:// MFUD_DB
# naming the postgres service and its database, each started only once
# postgres is healthy; the password in the URL is the one postgres gets; the
# load balancer's upstream lists the three replicas on mfud's port.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh
YAML=tools/lint/node_modules/yaml
if ! command -v node >/dev/null 2>&1 || [ ! -d "$YAML" ]; then
    skip "compose (node or tools/lint's yaml package missing: docker/deps.sh installs them)"
    finish
fi
out=$(node - <<'JS' 2>&1
const fs = require("fs");
const YAML = require("./tools/lint/node_modules/yaml");
const fails = [];
let doc;
try {
  doc = YAML.parse(fs.readFileSync("docker/compose.yaml", "utf8"), { merge: true });
} catch (e) {
  console.log("FAIL: docker/compose.yaml does not parse: " + e.message);
  process.exit(0);
}
const s = doc.services || {};
const pg = s.postgres || {};
const pgEnv = pg.environment || {};
const replicas = Object.keys(s).filter((k) => /^mfud\d+$/.test(k));
if (replicas.length !== 3) fails.push("want 3 mfud replicas, got " + replicas.length);
for (const k of replicas) {
  const r = s[k];
  if (!r.build || r.build.dockerfile !== "Dockerfile" || r.build.context !== "..")
    fails.push(k + ": not built from the repository's Dockerfile");
  const url = (r.environment || {}).MFUD_DB || "";
  const m = /^postgresql:\/\/([^:]+):([^@]+)@([^:/]+):5432\/([^?]+)/.exec(url);
  if (!m) fails.push(k + ": MFUD_DB is not a postgresql:// URL: " + url);
  else {
    if (m[1] !== pgEnv.POSTGRES_USER) fails.push(k + ": user " + m[1] + " is not POSTGRES_USER");
    if (m[2] !== pgEnv.POSTGRES_PASSWORD) fails.push(k + ": password differs from POSTGRES_PASSWORD");
    if (m[3] !== "postgres") fails.push(k + ": host " + m[3] + " is not the postgres service");
    if (m[4] !== pgEnv.POSTGRES_DB) fails.push(k + ": database " + m[4] + " is not POSTGRES_DB");
  }
  const dep = (r.depends_on || {}).postgres || {};
  if (dep.condition !== "service_healthy") fails.push(k + ": does not wait for postgres to be healthy");
}
if (!pg.healthcheck || !/pg_isready/.test(JSON.stringify(pg.healthcheck.test)))
  fails.push("postgres has no pg_isready healthcheck");
const conf = fs.readFileSync("docker/nginx.conf", "utf8");
for (const k of replicas)
  if (!new RegExp("server\\s+" + k + ":8080").test(conf)) fails.push("nginx.conf lacks upstream " + k + ":8080");
const lbVol = ((s.lb || {}).volumes || []).join(" ");
if (!/\.\/nginx\.conf:/.test(lbVol)) fails.push("lb does not mount docker/nginx.conf");
for (const f of fails) console.log("FAIL: " + f);
console.log("checks " + (9 * replicas.length + 3) + " failed " + fails.length);
JS
)
echo "$out" | grep '^FAIL' || true
n=$(echo "$out" | sed -n 's/^checks \([0-9]*\) failed \([0-9]*\)$/\1/p')
f=$(echo "$out" | sed -n 's/^checks \([0-9]*\) failed \([0-9]*\)$/\2/p')
if [ -z "$n" ]; then
    bad "compose check did not run: $out"
else
    pass=$((pass + n - f))
    fail=$((fail + f))
fi
finish

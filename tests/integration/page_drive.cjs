#!/usr/bin/env node
/* tests/integration/page_drive.cjs -- drive headless Chromium through mfud's page as a person
 * would (issue 13 item 4), for tests/integration/page.sh.
 *
 * Node's built-in modules only: Chromium is started with --remote-debugging-pipe and spoken
 * to with the DevTools protocol (JSON messages separated by NUL bytes; Chromium reads fd 3
 * and writes fd 4), so no WebSocket client, no Puppeteer, no network.
 *
 * The person: opens the page, fills the form (a mouse click on the button, text typed into
 * the fields), waits for the ranked table, looks at the charts, moves to rank 2 with the
 * keyboard (Tab, Enter), opens the result's link in a fresh browser state, uploads a
 * config.json, runs a comparison, follows the recent-results list, opens a query link, and
 * sends a request the daemon refuses. Each check prints "ok: ..." or "FAIL: ...".
 * Throughout, every console error, uncaught exception, failed load, HTTP error not expected,
 * and request to anywhere but the daemon is recorded and fails the run. Screenshots
 * (1280x800 PNG) go to OUT.
 *
 * usage: node page_drive.cjs CHROMIUM BASE_URL OUT_DIR CONFIG_JSON
 * exit: 0 all passed, 1 a check failed, 77 Chromium did not start (the caller skips). */
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const [CHROME, BASE, OUT, HF_CONFIG] = process.argv.slice(2);
if (!CHROME || !BASE || !OUT || !HF_CONFIG) {
  console.error('usage: node page_drive.cjs CHROMIUM BASE_URL OUT_DIR CONFIG_JSON');
  process.exit(2);
}
const WIDTH = 1280, HEIGHT = 800;
const origin = new URL(BASE).origin;
let passed = 0, failed = 0;
const ok = (name) => { passed++; console.log('ok: ' + name); };
const bad = (name, why) => { failed++; console.log('FAIL: ' + name + (why ? ' (' + why + ')' : '')); };
const check = (name, cond, why) => (cond ? ok(name) : bad(name, why));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/* ---- Chromium over a pipe ------------------------------------------------------------------ */

fs.mkdirSync(OUT, { recursive: true });
const profile = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'mfud-page-'));
const chromeLog = fs.openSync(path.join(OUT, 'chromium.log'), 'w');
const child = spawn(CHROME, [
  '--headless', '--remote-debugging-pipe', `--user-data-dir=${profile}`,
  // root in a container has no user namespaces for the sandbox; the page is our own
  '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
  '--no-first-run', '--no-default-browser-check', '--disable-extensions', '--disable-sync',
  '--disable-background-networking', '--disable-component-update', '--disable-default-apps',
  '--metrics-recording-only', '--mute-audio', '--hide-scrollbars', '--force-color-profile=srgb',
  `--window-size=${WIDTH},${HEIGHT}`, 'about:blank',
], { stdio: ['ignore', chromeLog, chromeLog, 'pipe', 'pipe'] });
let chromeExited = null;
function gone(why) {
  chromeExited = why;
  for (const { reject, method } of pending.values()) reject(new Error(`${method}: chromium exited (${why})`));
  pending.clear();
}
child.on('exit', (code, sig) => gone(sig || code));
child.on('error', (e) => gone(e.message));
const toChrome = child.stdio[3], fromChrome = child.stdio[4];

let nextId = 1;
const pending = new Map();
const listeners = [];
let buf = Buffer.alloc(0);
fromChrome.on('data', (chunk) => {
  buf = Buffer.concat([buf, chunk]);
  let i;
  while ((i = buf.indexOf(0)) >= 0) {
    const msg = JSON.parse(buf.subarray(0, i).toString('utf8'));
    buf = buf.subarray(i + 1);
    if (msg.id && pending.has(msg.id)) {
      const { resolve, reject, method } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) reject(new Error(`${method}: ${msg.error.message}`));
      else resolve(msg.result);
    } else if (msg.method) {
      for (const l of listeners) l(msg);
    }
  }
});
fromChrome.on('error', () => {});
toChrome.on('error', () => {});
function send(method, params = {}, sessionId, timeoutMs = 30000) {
  const id = nextId++;
  const msg = { id, method, params };
  if (sessionId) msg.sessionId = sessionId;
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      pending.delete(id);
      reject(new Error(`${method}: no answer in ${timeoutMs} ms`));
    }, timeoutMs);
    pending.set(id, {
      method,
      resolve: (v) => { clearTimeout(t); resolve(v); },
      reject: (e) => { clearTimeout(t); reject(e); },
    });
    if (chromeExited !== null) reject(new Error(`${method}: chromium exited (${chromeExited})`));
    else toChrome.write(JSON.stringify(msg) + '\0');
  });
}

/* ---- what the page does wrong, all along ------------------------------------------------------- */

let phase = 'start';
const problems = [];  // {phase, what}
const expected = { status: new Set() }; // HTTP statuses allowed in the current phase
const requests = [];  // {url, method, status, mime, headers, phase}
const byRequestId = new Map();
function onEvent(msg) {
  const p = msg.params || {};
  switch (msg.method) {
  case 'Runtime.exceptionThrown': {
    const d = p.exceptionDetails || {};
    problems.push({ phase, what: 'uncaught exception: ' + ((d.exception && d.exception.description) || d.text) });
    break;
  }
  case 'Runtime.consoleAPICalled':
    if (p.type === 'error' || p.type === 'assert' || p.type === 'warning')
      problems.push({ phase, what: `console.${p.type}: ` + (p.args || []).map((a) => a.value || a.description).join(' ') });
    break;
  case 'Log.entryAdded': {
    const e = p.entry || {};
    // a refused request's own "Failed to load resource: 422" is the network's report of a
    // status checked below; everything else at error level is a problem
    if ((e.level === 'error' || e.level === 'warning') &&
        !(e.source === 'network' && [...expected.status].some((s) => (e.text || '').includes(`status of ${s}`))))
      problems.push({ phase, what: `log ${e.source}/${e.level}: ${e.text} ${e.url || ''}` });
    break;
  }
  case 'Network.requestWillBeSent': {
    const u = p.request.url;
    const r = { url: u, method: p.request.method, headers: p.request.headers, status: 0, phase };
    byRequestId.set(p.requestId, r);
    requests.push(r);
    if (!(u.startsWith(origin + '/') || u.startsWith('blob:' + origin) || u.startsWith('data:') || u === 'about:blank'))
      problems.push({ phase, what: 'request off the daemon: ' + u });
    break;
  }
  case 'Network.responseReceived': {
    const r = byRequestId.get(p.requestId);
    if (r) {
      r.status = p.response.status;
      r.mime = p.response.mimeType;
    }
    if (p.response.status >= 400 && !expected.status.has(p.response.status))
      problems.push({ phase, what: `HTTP ${p.response.status} for ${p.response.url}` });
    break;
  }
  case 'Network.loadingFailed':
    // a poll cut short by our own navigation is not the page's fault
    if (!p.canceled && p.errorText !== 'net::ERR_ABORTED')
      problems.push({ phase, what: `load failed: ${p.errorText} ${(byRequestId.get(p.requestId) || {}).url || ''}` });
    break;
  default:
  }
}
listeners.push(onEvent);

/* ---- a page and a person's hands ------------------------------------------------------------- */

let session;
const page = (method, params, t) => send(method, params, session, t);
async function evaluate(expression) {
  const r = await page('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
  if (r.exceptionDetails) throw new Error('evaluate: ' + (r.exceptionDetails.exception ? r.exceptionDetails.exception.description : r.exceptionDetails.text));
  return r.result.value;
}
async function waitFor(expression, what, timeoutMs = 30000) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await evaluate(expression);
    } catch (e) {
      last = undefined; // the document may be between loads
    }
    if (last) return last;
    if (Date.now() > end) throw new Error('timed out waiting for ' + what);
    await sleep(100);
  }
}
let loadWaiter = null;
listeners.push((m) => {
  if (m.method === 'Page.loadEventFired' && m.sessionId === session && loadWaiter) loadWaiter();
});
/* a full load (about:blank first, so a URL that differs only in its hash loads anew) */
async function open(url) {
  await page('Page.navigate', { url: 'about:blank' });
  const loaded = new Promise((r) => { loadWaiter = r; });
  await page('Page.navigate', { url });
  await Promise.race([loaded, sleep(20000)]);
  loadWaiter = null;
  await waitFor('document.body && document.body.dataset.ready === "true"', 'the page to start');
}
const q = (sel) => JSON.stringify(sel);
async function center(sel) {
  const r = await evaluate(`(() => { const e = document.querySelector(${q(sel)}); if (!e) return null;
    e.scrollIntoView({block: 'center'}); const b = e.getBoundingClientRect();
    return {x: b.left + b.width / 2, y: b.top + b.height / 2, w: b.width, h: b.height}; })()`);
  if (!r || !r.w) throw new Error('nothing visible to click at ' + sel);
  return r;
}
async function click(sel) {
  const { x, y } = await center(sel);
  await page('Input.dispatchMouseEvent', { type: 'mouseMoved', x, y });
  await page('Input.dispatchMouseEvent', { type: 'mousePressed', x, y, button: 'left', clickCount: 1 });
  await page('Input.dispatchMouseEvent', { type: 'mouseReleased', x, y, button: 'left', clickCount: 1 });
}
/* click into a field, select what is there, type over it */
async function type(sel, text) {
  await click(sel);
  await evaluate(`document.querySelector(${q(sel)}).select()`);
  await page('Input.insertText', { text });
}
/* a <select>: Chromium draws its list natively, outside the page, so the choice is set the
 * way the list would set it (the value, then the change event) */
async function choose(sel, value) {
  await click(sel);
  await page('Input.dispatchKeyEvent', { type: 'keyDown', key: 'Escape', code: 'Escape', windowsVirtualKeyCode: 27 });
  await page('Input.dispatchKeyEvent', { type: 'keyUp', key: 'Escape', code: 'Escape', windowsVirtualKeyCode: 27 });
  const got = await evaluate(`(() => { const s = document.querySelector(${q(sel)});
    if (![...s.options].some((o) => o.value === ${q(value)})) return false;
    s.value = ${q(value)}; s.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`);
  if (!got) throw new Error(`${sel} has no option ${value}`);
}
const KEYS = { Tab: 9, Enter: 13 };
async function press(key) {
  const k = { key, code: key, windowsVirtualKeyCode: KEYS[key], nativeVirtualKeyCode: KEYS[key] };
  await page('Input.dispatchKeyEvent', { type: 'rawKeyDown', ...k });
  if (key === 'Enter') await page('Input.dispatchKeyEvent', { type: 'char', text: '\r', ...k });
  await page('Input.dispatchKeyEvent', { type: 'keyUp', ...k });
}
async function screenshot(name) {
  await sleep(150); // let the last paint land
  const { data } = await page('Page.captureScreenshot', { format: 'png' }); // the viewport: WIDTH x HEIGHT
  fs.writeFileSync(path.join(OUT, name), Buffer.from(data, 'base64'));
  console.log(`screenshot: ${path.join(OUT, name)}`);
}
async function scrollTo(sel) {
  await evaluate(`document.querySelector(${q(sel)}).scrollIntoView({block: 'start'})`);
}
async function api(p) {
  const r = await fetch(BASE + p);
  return r.json();
}
/* the figures of the chosen rank, each image loaded from its route (or the roofline's blob) */
const figuresLoaded = (rank) => `(() => {
  const f = (id) => document.querySelector('#' + id + ' img');
  const ok = (img) => img && img.complete && img.naturalWidth > 0 && !img.closest('figure').classList.contains('loading');
  const want = ['gap', 'memory', 'timeline'].every((n) => {
    const img = f('fig-' + n);
    return ok(img) && img.src.includes('/charts/' + n + '.svg?rank=${rank}');
  });
  const roof = f('fig-roofline');
  return want && ok(roof) && roof.src.startsWith('blob:');
})()`;
const rowCount = 'document.querySelectorAll("#configs tbody tr[data-rank]").length';

/* ---- the session --------------------------------------------------------------------------- */

async function run() {
  phase = 'start';
  const version = await send('Browser.getVersion', {}, undefined, 30000).catch((e) => null);
  if (!version) {
    console.log(`chromium did not start (exit ${chromeExited}); see ${path.join(OUT, 'chromium.log')}`);
    return 77;
  }
  console.log('browser: ' + version.product);
  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  ({ sessionId: session } = await send('Target.attachToTarget', { targetId, flatten: true }));
  for (const d of ['Page', 'Runtime', 'Log', 'Network']) await page(d + '.enable');
  await page('Emulation.setDeviceMetricsOverride', { width: WIDTH, height: HEIGHT, deviceScaleFactor: 1, mobile: false });

  /* 1. the page and its form */
  phase = 'form';
  await open(BASE + '/');
  check('the page has its title', (await evaluate('document.title')).includes('mfud'));
  const nModels = await evaluate('document.querySelectorAll("#model option").length');
  const presetModels = await api('/presets/models');
  check('the model list is /presets/models', nModels === presetModels.length, `${nModels} options, ${presetModels.length} presets`);
  const nHw = await evaluate('document.querySelectorAll("#hardware option").length');
  check('the chip list is /presets/hardware', nHw === (await api('/presets/hardware')).length, `${nHw} options`);
  const unlabelled = await evaluate(`[...document.querySelectorAll('input, select, button, textarea')]
    .filter((e) => e.type !== 'hidden' && !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.textContent.trim())
    .map((e) => e.id || e.outerHTML.slice(0, 60))`);
  check('every control has a label', unlabelled.length === 0, unlabelled.join(', '));
  check('the welcome text shows', await evaluate('!document.querySelector("#welcome").hidden'));
  await screenshot('01-form.png');

  /* 2. a search through the form */
  phase = 'search';
  await choose('#model', 'llama3-8b');
  await choose('#hardware', 'h100-sxm');
  await type('#devices', '64');
  await type('#seq_len', '8192');
  await type('#batch', '4194304');
  await type('#top_k', '5');
  check('the batch hint counts sequences', (await evaluate('document.querySelector("#batch-info").textContent')).includes('512 sequences'));
  await click('#submit-search');
  const progress = await waitFor(`(() => { const s = document.querySelector('#status');
    return !s.hidden && /Queued|Running/.test(s.textContent) ? s.textContent.trim() : false; })()`, 'the progress of the job', 10000)
    .catch((e) => { bad('progress shows while the job runs', e.message); return null; });
  if (progress) ok('progress shows while the job runs: ' + progress.replace(/\s+/g, ' '));
  await waitFor(`${rowCount} === 5 && !document.querySelector('#result').hidden`, 'five ranked rows', 60000);
  ok('the ranked table has 5 rows');
  const hash = await evaluate('location.hash');
  const m = /^#\/results\/([0-9a-f]{64})$/.exec(hash);
  check('the address is the result\'s (#/results/ID)', Boolean(m), hash);
  const id = m ? m[1] : '';
  const polls = requests.filter((r) => r.url === `${BASE}/results/${id}` && r.phase === 'search');
  check('the page polled with If-None-Match and got 304s', polls.some((r) => r.headers['If-None-Match'] && r.status === 304),
    polls.map((r) => r.status).join(','));
  const post = requests.find((r) => r.url === BASE + '/search' && r.method === 'POST');
  check('the search was POSTed with Prefer: respond-async', post && post.headers.Prefer === 'respond-async' && post.status === 202,
    post ? `${post.status} ${post.headers.Prefer}` : 'no POST');
  const res = (await api('/results/' + id)).result;
  const row1 = await evaluate(`[...document.querySelectorAll('#configs tbody tr[data-rank="1"] > *')].map((c) => c.textContent.trim())`);
  const c1 = res.configs[0];
  const p = c1.parallel;
  check('row 1 shows rank 1\'s layout', row1[1].startsWith([p.dp, p.fsdp, p.tp, p.ep, p.pp, p.cp].join('/')), row1[1]);
  check('row 1 shows rank 1\'s expected MFU', row1[7].startsWith((100 * c1.expected.mfu).toFixed(1) + ' %'), row1[7]);
  check('row 1 shows memory per device', row1[5].startsWith((c1.memory.total_bytes / 1e9).toFixed(1) + ' / '), row1[5]);
  check('row 1 shows the MFU interval', /\d+\.\d–\d+\.\d/.test(row1[7]), row1[7]);
  const heads = await evaluate('[...document.querySelectorAll("#configs thead th")].map((t) => t.textContent)');
  check('the table has every column', ['Rank', 'Layout', 'Schedule', 'mbs', 'Recompute', 'Memory', 'Tokens/s', 'Expected MFU', 'Tier', 'Frameworks']
    .every((h, i) => heads[i] && heads[i].startsWith(h)), heads.join('|'));
  const csvHref = await evaluate('document.querySelector("#csv-link").href');
  const csv = await fetch(csvHref);
  const csvRows = (await csv.text()).trim().split('\n');
  check('the CSV link gives the ranking as CSV', (csv.headers.get('content-type') || '').startsWith('text/csv') && csvRows.length === 6,
    `${csv.headers.get('content-type')}, ${csvRows.length} lines`);
  await waitFor(figuresLoaded(1), 'the charts of rank 1', 30000);
  ok('gap, memory, timeline and roofline charts loaded for rank 1');
  const alts = await evaluate(`['gap', 'memory', 'timeline', 'roofline'].map((n) => document.querySelector('#fig-' + n + ' img').alt)`);
  check('the charts\' alt text is the SVGs\' title and description', alts.every((a) => a.includes('llama3-8b') && a.length > 60),
    alts.map((a) => a.slice(0, 50)).join(' | '));
  const svgOk = (frag) => requests.some((r) => r.url.includes(frag) && r.status === 200 && r.mime === 'image/svg+xml');
  check('the chart routes answered SVG', ['gap.svg?rank=1', 'memory.svg?rank=1', 'timeline.svg?rank=1'].every(svgOk));
  const roofPost = requests.find((r) => r.url === BASE + '/roofline' && r.headers.Accept === 'image/svg+xml');
  check('the roofline is POST /roofline answered as SVG', roofPost && roofPost.status === 200 && roofPost.mime === 'image/svg+xml',
    roofPost ? `${roofPost.status} ${roofPost.mime}` : 'not requested');
  await evaluate('window.scrollTo(0, 0)');
  await screenshot('02-results.png');
  await scrollTo('#detail');
  await screenshot('03-charts.png');

  /* 3. the keyboard: from rank 1 to rank 2 */
  phase = 'keyboard';
  await evaluate('document.querySelector("#configs button.rank[data-rank=\\"1\\"]").focus()');
  await press('Tab');
  const focused = await evaluate('document.activeElement.dataset.rank || document.activeElement.outerHTML.slice(0, 80)');
  check('Tab moves from rank 1 to rank 2', focused === '2', focused);
  await press('Enter');
  await waitFor(figuresLoaded(2), 'the charts of rank 2', 20000).then(() => ok('Enter on rank 2 shows its charts'),
    (e) => bad('Enter on rank 2 shows its charts', e.message));
  check('rank 2 is marked selected', await evaluate('document.querySelector("#configs button.rank[data-rank=\\"2\\"]").getAttribute("aria-pressed") === "true"'));
  check('the address names rank 2', (await evaluate('location.hash')) === `#/results/${id}?rank=2`);

  /* 4. the link, opened by someone else (nothing remembered in this browser) */
  phase = 'shared';
  await evaluate('localStorage.clear()');
  await open(`${BASE}/#/results/${id}?rank=2`);
  await waitFor(`${rowCount} === 5`, 'the shared result\'s table', 20000);
  await waitFor(figuresLoaded(2), 'the shared result\'s charts', 30000).then(() => ok('a shared link shows the table and the charts of its rank'),
    (e) => bad('a shared link shows the table and the charts of its rank', e.message));
  const roofDesc = await evaluate('document.querySelector("#fig-roofline .desc").textContent');
  check('the roofline of a shared link is rebuilt exactly', roofDesc.length > 40 && !roofDesc.includes('approximate'), roofDesc.slice(0, 80));

  /* 5. a config.json of one's own */
  phase = 'upload';
  await open(BASE + '/');
  const { root } = await page('DOM.getDocument', { depth: 1 });
  const { nodeId } = await page('DOM.querySelector', { nodeId: root.nodeId, selector: '#hf-file' });
  await page('DOM.setFileInputFiles', { nodeId, files: [path.resolve(HF_CONFIG)] });
  const hfInfo = await waitFor('document.querySelector("#hf-info").textContent', 'the upload to be read', 5000);
  check('the uploaded config.json is read in the page', /qwen2/.test(hfInfo), hfInfo);
  check('the preset list is off while a config.json is used', await evaluate('document.querySelector("#model").disabled'));
  await type('#devices', '8');
  await type('#seq_len', '4096');
  await type('#batch', '1048576');
  await type('#top_k', '3');
  await click('#submit-search');
  await waitFor(`${rowCount} === 3 && location.hash.startsWith('#/results/')`, 'the uploaded model\'s ranking', 60000);
  const hfId = (await evaluate('location.hash')).slice(10, 74);
  const hfRes = (await api('/results/' + hfId)).result;
  check('the upload was sent as {"model": {"hf_config": ...}}', hfRes.model.source === 'hf_config' && hfRes.model.name === 'qwen2',
    `source ${hfRes.model.source}, name ${hfRes.model.name}`);
  await waitFor(figuresLoaded(1), 'the uploaded model\'s charts', 30000).then(() => ok('the uploaded model\'s charts loaded'),
    (e) => bad('the uploaded model\'s charts loaded', e.message));
  await evaluate('window.scrollTo(0, 0)');
  await screenshot('05-upload.png');

  /* 6. a comparison */
  phase = 'compare';
  await open(BASE + '/');
  await click('#vary summary');
  await click('#vary-hw-h100-sxm');
  await click('#vary-hw-a100-80gb');
  await type('#vary-devices', '32, 64');
  await type('#top_k', '3');
  await click('#budget summary');
  await type('#tokens', '1e12');
  await type('#price', '2.5');
  await click('#submit-compare');
  await waitFor('document.querySelectorAll("#variants tbody tr").length === 4 && !document.querySelector("#compare").hidden',
    'the four variants', 60000);
  ok('the comparison table has 4 variants');
  await waitFor(`(() => { const i = document.querySelector('#fig-compare img');
    return i.complete && i.naturalWidth > 0 && i.src.includes('/charts/compare.svg') && !i.closest('figure').classList.contains('loading'); })()`,
  'the comparison chart', 20000).then(() => ok('the comparison chart loaded'), (e) => bad('the comparison chart loaded', e.message));
  const tags = await evaluate('[...document.querySelectorAll("#variants .tag")].map((t) => t.textContent)');
  check('the fastest and the cheapest variants are marked', tags.includes('fastest') && tags.includes('cheapest'), tags.join(','));
  const costs = await evaluate('[...document.querySelectorAll("#variants tbody tr")].map((r) => r.children[8].textContent)');
  check('each variant has its cost to train', costs.every((c) => /USD/.test(c) || c === '–'), costs.join(','));
  await evaluate('window.scrollTo(0, 0)');
  await screenshot('04-compare.png');

  /* 7. the recent results, followed by a click */
  phase = 'recent';
  await waitFor('document.querySelectorAll("#recent li").length >= 3', 'the recent results', 10000)
    .then(() => ok('the recent list shows the searches and the comparison'), (e) => bad('the recent list', e.message));
  await click(`#recent a[href="#/results/${id}"]`);
  await waitFor(`${rowCount} === 5 && location.hash === '#/results/${id}'`, 'the result picked from the list', 20000)
    .then(() => ok('a recent result opens from the list'), (e) => bad('a recent result opens from the list', e.message));

  /* 8. a query as a link: the page fills the form from it and submits */
  phase = 'query-link';
  await open(`${BASE}/#/search?model=llama3-8b&hw=h100-sxm&devices=128&seq=8192&batch=4194304&top_k=3`);
  await waitFor(`${rowCount} === 3 && /^#\\/results\\/[0-9a-f]{64}$/.test(location.hash)`, 'the query link\'s result', 60000)
    .then(() => ok('a #/search?... link submits itself and shows the ranking'), (e) => bad('a #/search?... link', e.message));
  check('the form shows the linked query', (await evaluate('document.querySelector("#devices").value')) === '128');
  check('the result title names the query', (await evaluate('document.querySelector("#result-title").textContent')).includes('128'));

  /* 9. a request the daemon refuses: its problem and pointer on the page */
  phase = 'refused';
  expected.status = new Set([422]);
  await open(`${BASE}/#/search?model=llama3-8b&hw=h100-sxm&devices=64&seq=0&batch=4194304&top_k=3`);
  const err = await waitFor('(() => { const e = document.querySelector("#error"); return !e.hidden && e.textContent; })()', 'the error', 10000)
    .catch(() => '');
  check('a refused request shows the problem with its pointer', err.includes('/training/seq_len'), err.slice(0, 120));
  check('the alert is announced (role=alert)', await evaluate('document.querySelector("#error").getAttribute("role") === "alert"'));
  await screenshot('06-refused.png');
  expected.status = new Set();
  await sleep(300);

  /* throughout */
  check('no console errors, exceptions, failed loads or unexpected HTTP errors', problems.length === 0,
    problems.map((x) => `[${x.phase}] ${x.what}`).join('; '));
  check('nothing was requested from anywhere but the daemon', !problems.some((x) => x.what.startsWith('request off')));
  return failed ? 1 : 0;
}

const deadline = setTimeout(() => {
  bad('the browser session finished in time', `stuck in phase ${phase}`);
  finish(1);
}, 240000);
function finish(code) {
  clearTimeout(deadline);
  console.log(`${passed} passed, ${failed} failed`);
  try { child.kill('SIGKILL'); } catch (e) { /* gone */ }
  try { fs.rmSync(profile, { recursive: true, force: true }); } catch (e) { /* best effort */ }
  process.exit(code);
}
run().then(finish, async (e) => {
  bad(`phase ${phase}`, e.message);
  if (problems.length) console.log('recorded: ' + problems.map((x) => `[${x.phase}] ${x.what}`).join('; '));
  if (session) await screenshot(`failed-${phase}.png`).catch(() => {}); // what the page showed then
  finish(1);
});

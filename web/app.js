/* web/app.js -- the page mfud serves at / (issue 13 item 1). Plain JavaScript,
 * no framework, no build step; served as it is from the binary (server/page.c).
 *
 * Routes (the part of the address after #, so every view can be shared):
 *   #/                       the form and the recent results
 *   #/results/ID[?rank=N]    a result: polled until done, then the ranked table and the
 *                            charts of rank N (a comparison: its table and chart)
 *   #/search?model=..&hw=..&devices=..&seq=..&batch=..&dtype=..&top_k=..[&tokens=..&price=..]
 *   #/compare?...&vary_hw=a,b&vary_devices=32,64
 *                            fill the form from the address and submit it (a query to share)
 *
 * The API calls: GET /presets/{models,hardware}; POST /search or /compare with
 * Prefer: respond-async, then GET /results/ID with If-None-Match until it is done
 * (a 304 while nothing changed); GET /results (recent); the charts as <img> of
 * GET /results/ID/charts/{gap,memory,timeline,compare}.svg?rank=N; the roofline as
 * POST /roofline with Accept: image/svg+xml (the same request).
 *
 * (Over 600 lines, one file on purpose: the page has no build step and
 * loads no modules, so its views, the form and the charts' wiring share one
 * script; sections are marked below.) */
'use strict';

const $ = (sel) => document.querySelector(sel);
const POLL_MS = 400;

const state = {
  models: [],
  hardware: [],
  hf: null,          // {name, config} of an uploaded config.json
  seq: 0,            // bumps on every navigation: stale polls and renders stop
  doc: null,         // the result document shown
  id: null,
  rank: 1,
  rooflineFor: null, // the result id whose roofline is drawn
};

/* ---- formatting -------------------------------------------------------------------- */

const fmtInt = (n) => Math.round(n).toLocaleString('en-US');
const pct = (x, d = 1) => (100 * x).toFixed(d) + ' %';
const gb = (b) => (b / 1e9).toFixed(1);
function si(n) {
  const a = Math.abs(n);
  if (a >= 1e12) return (n / 1e12).toFixed(2) + ' T';
  if (a >= 1e9) return (n / 1e9).toFixed(2) + ' G';
  if (a >= 1e6) return (n / 1e6).toFixed(2) + ' M';
  if (a >= 1e3) return (n / 1e3).toFixed(1) + ' k';
  return n.toFixed(n >= 100 ? 0 : 1);
}
function binary(n) {
  for (const [u, v] of [['Gi', 2 ** 30], ['Mi', 2 ** 20], ['Ki', 2 ** 10]])
    if (n >= v && n % v === 0) return n / v + ' ' + u;
  return fmtInt(n);
}
function seconds(s) {
  if (s >= 100) return s.toFixed(0) + ' s';
  if (s >= 1) return s.toFixed(2) + ' s';
  return (s * 1e3).toFixed(1) + ' ms';
}
function money(x, cur) {
  const c = cur || 'USD';
  if (x >= 1e6) return (x / 1e6).toFixed(2) + ' M ' + c;
  if (x >= 1e3) return (x / 1e3).toFixed(1) + ' k ' + c;
  return x.toFixed(0) + ' ' + c;
}
function layout(p) {
  return [p.dp, p.fsdp, p.tp, p.ep, p.pp, p.cp].join('/');
}
function layoutWords(p) {
  const parts = ['dp', 'fsdp', 'tp', 'ep', 'pp', 'cp'].map((k) => `${k} ${p[k]}`);
  if (p.sp) parts.push('sequence parallel');
  if (p.zero) parts.push('ZeRO-' + p.zero);
  return parts.join(', ');
}
function schedule(c) {
  return c.vpp > 1 ? `${c.schedule}, vpp ${c.vpp}` : c.schedule;
}
function recompute(c) {
  if (c.recompute === 'selective' && c.recompute_modules && c.recompute_modules.length)
    return `selective (${c.recompute_modules.join(', ')})`;
  if (c.recompute === 'full' && c.recompute_layers > 0) return `full (${c.recompute_layers} layers)`;
  return c.recompute;
}
/* The expected MFU's interval from the step-time interval (MFU is inverse to time). */
function mfuInterval(e) {
  if (!e || !(e.step_time_low_s > 0) || !(e.step_time_high_s > 0)) return null;
  return [e.mfu * e.step_time_s / e.step_time_high_s, e.mfu * e.step_time_s / e.step_time_low_s];
}
function el(tag, attrs, ...kids) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') n.className = v;
    else if (k === 'text') n.textContent = v;
    else n.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids) if (k !== null && k !== undefined) n.append(k);
  return n;
}
function show(node, on) {
  node.hidden = !on;
}

/* ---- errors -------------------------------------------------------------------------- */

class Problem extends Error {
  constructor(doc) {
    super(doc.detail || doc.title || 'error');
    this.doc = doc;
  }
}
async function problemOf(resp) {
  let doc;
  try {
    doc = await resp.json();
  } catch (e) {
    doc = null;
  }
  if (!doc || typeof doc !== 'object') doc = { title: resp.statusText, status: resp.status };
  if (!doc.status) doc.status = resp.status;
  return new Problem(doc);
}
function showError(err) {
  const box = $('#error');
  box.replaceChildren();
  if (err instanceof Problem) {
    const d = err.doc;
    box.append(el('p', {}, el('strong', { text: `${d.title || 'Error'} (${d.status})` }), d.detail ? ': ' + d.detail : ''));
    if (Array.isArray(d.errors) && d.errors.length) {
      const ul = el('ul');
      for (const e of d.errors) ul.append(el('li', {}, el('code', { text: e.pointer || '/' }), ' ' + e.detail));
      box.append(ul);
    }
    if (d.type) box.append(el('p', {}, 'What it means: ', el('a', { href: d.type, text: d.type })));
  } else {
    box.append(el('p', { text: err && err.message ? err.message : String(err) }));
  }
  show(box, true);
}
function clearError() {
  show($('#error'), false);
  $('#error').replaceChildren();
}
window.addEventListener('error', (e) => showError(new Error('page error: ' + e.message)));
window.addEventListener('unhandledrejection', (e) => showError(e.reason || new Error('page error')));

async function getJSON(url) {
  let resp;
  try {
    resp = await fetch(url, { headers: { Accept: 'application/json' } });
  } catch (e) {
    throw new Error(`mfud did not answer ${url}: is the daemon running?`);
  }
  if (!resp.ok) throw await problemOf(resp);
  return resp.json();
}

/* ---- presets and the form ---------------------------------------------------------------- */

async function loadPresets() {
  const [models, hardware] = await Promise.all([getJSON('/presets/models'), getJSON('/presets/hardware')]);
  state.models = models;
  state.hardware = hardware;
  const ms = $('#model');
  ms.replaceChildren(...models.map((m) => el('option', { value: m.name, text: m.name, title: m.description })));
  ms.value = models.some((m) => m.name === 'llama3-8b') ? 'llama3-8b' : models[0].name;
  const hs = $('#hardware');
  hs.replaceChildren(...hardware.map((h) => el('option', { value: h.name, text: h.name, title: h.description })));
  hs.value = hardware.some((h) => h.name === 'h100-sxm') ? 'h100-sxm' : hardware[0].name;
  const box = $('#vary-hw');
  for (const h of hardware) {
    const id = 'vary-hw-' + h.name;
    box.append(el('div', { class: 'check' },
      el('input', { type: 'checkbox', id, name: 'vary-hw', value: h.name }),
      el('label', { for: id, text: h.name, title: h.description })));
  }
  describeModel();
  describeHardware();
}
function describeModel() {
  const m = state.models.find((x) => x.name === $('#model').value);
  $('#model-info').textContent = m
    ? `${si(m.params_total)} parameters${m.params_active !== m.params_total ? ` (${si(m.params_active)} active)` : ''}, ${m.layers} layers, d_model ${m.d_model}`
    : '';
}
function describeHardware() {
  const h = state.hardware.find((x) => x.name === $('#hardware').value);
  if (!h) return;
  const p = h.peak_flops || {};
  const peak = p.bf16 || p.fp16 || 0;
  $('#hardware-info').textContent = `${gb(h.hbm_bytes)} GB HBM at ${(h.hbm_bw_bytes_s / 1e12).toFixed(2)} TB/s, ${(peak / 1e12).toFixed(0)} TFLOP/s bf16`;
}
function describeBatch() {
  const b = Number($('#batch').value), s = Number($('#seq_len').value);
  $('#batch-info').textContent = b > 0 && s > 0
    ? `${binary(b)} tokens${b % s === 0 ? ` = ${fmtInt(b / s)} sequences of ${fmtInt(s)}` : ''}`
    : '';
}

async function loadHF(file) {
  const info = $('#hf-info');
  if (!file) return;
  let config;
  try {
    config = JSON.parse(await file.text());
    if (!config || typeof config !== 'object' || Array.isArray(config)) throw new Error('not a JSON object');
  } catch (e) {
    state.hf = null;
    info.textContent = `${file.name} is not a config.json (${e.message}).`;
    info.classList.add('bad');
    $('#model').disabled = false;
    show($('#hf-clear'), false);
    return;
  }
  const c = config.text_config && typeof config.text_config === 'object' ? config.text_config : config;
  state.hf = { name: file.name, config };
  info.classList.remove('bad');
  const bits = [c.model_type || config.model_type || 'unknown model_type'];
  if (c.num_hidden_layers) bits.push(`${c.num_hidden_layers} layers`);
  if (c.hidden_size) bits.push(`hidden ${c.hidden_size}`);
  info.textContent = `Using ${file.name}: ${bits.join(', ')} (sent as it is; mfud reads it).`;
  $('#model').disabled = true;
  $('#model-info').textContent = 'Not used while a config.json is.';
  show($('#hf-clear'), true);
}
function clearHF() {
  state.hf = null;
  $('#hf-file').value = '';
  $('#hf-info').textContent = '';
  $('#model').disabled = false;
  describeModel();
  show($('#hf-clear'), false);
  $('#model').focus();
}

const int = (id) => Number.parseInt($(id).value, 10);
function baseRequest() {
  const req = {
    model: state.hf ? { hf_config: state.hf.config } : { preset: $('#model').value },
    hardware: { preset: $('#hardware').value },
    devices: int('#devices'),
    training: { seq_len: int('#seq_len'), global_batch_tokens: int('#batch'), dtype: $('#dtype').value },
    search: { top_k: int('#top_k') },
  };
  const tokens = $('#tokens').value.trim();
  if (tokens) req.training.tokens = Number(tokens);
  const price = $('#price').value.trim();
  if (price) req.cost = { price_per_device_hour: Number(price) };
  return req;
}
function varyOf() {
  const vary = {};
  const hw = [...document.querySelectorAll('input[name="vary-hw"]:checked')].map((x) => ({ preset: x.value }));
  if (hw.length) vary.hardware = hw;
  const dv = $('#vary-devices').value.split(/[\s,]+/).filter(Boolean).map(Number);
  if (dv.length) vary.devices = dv;
  return vary;
}
/* The query as an address (#/search?... or #/compare?...): not for uploaded configs. */
function queryHash(kind) {
  if (state.hf) return null;
  const q = new URLSearchParams({
    model: $('#model').value, hw: $('#hardware').value, devices: $('#devices').value,
    seq: $('#seq_len').value, batch: $('#batch').value, dtype: $('#dtype').value, top_k: $('#top_k').value,
  });
  if ($('#tokens').value.trim()) q.set('tokens', $('#tokens').value.trim());
  if ($('#price').value.trim()) q.set('price', $('#price').value.trim());
  if (kind === 'compare') {
    const v = varyOf();
    if (v.hardware) q.set('vary_hw', v.hardware.map((h) => h.preset).join(','));
    if (v.devices) q.set('vary_devices', v.devices.join(','));
  }
  return `#/${kind}?${q}`;
}
function fillForm(q) {
  const set = (id, key) => {
    if (q.has(key)) $(id).value = q.get(key);
  };
  if (q.has('model')) {
    if (state.hf) clearHF();
    set('#model', 'model');
  }
  set('#hardware', 'hw');
  set('#devices', 'devices');
  set('#seq_len', 'seq');
  set('#batch', 'batch');
  set('#dtype', 'dtype');
  set('#top_k', 'top_k');
  set('#tokens', 'tokens');
  set('#price', 'price');
  if (q.has('vary_hw')) {
    const want = new Set(q.get('vary_hw').split(','));
    for (const x of document.querySelectorAll('input[name="vary-hw"]')) x.checked = want.has(x.value);
  }
  set('#vary-devices', 'vary_devices');
  if (q.has('tokens') || q.has('price')) $('#budget').open = true;
  if (q.has('vary_hw') || q.has('vary_devices')) $('#vary').open = true;
  describeModel();
  describeHardware();
  describeBatch();
}

/* ---- submitting and polling ---------------------------------------------------------------- */

function remember(id, req) {
  try {
    localStorage.setItem('mfud:req:' + id, JSON.stringify(req));
  } catch (e) {
    /* private mode or full: the roofline is then rebuilt from the result */
  }
}
function recall(id) {
  try {
    return JSON.parse(localStorage.getItem('mfud:req:' + id) || 'null');
  } catch (e) {
    return null;
  }
}

async function submit(kind, how) {
  clearError();
  const base = baseRequest();
  let body = base, url = '/search';
  if (kind === 'compare') {
    const vary = varyOf();
    if (!vary.hardware && !vary.devices) {
      showError(new Error('To compare, tick at least one chip or give device counts under "Compare variants".'));
      $('#vary').open = true;
      $('#vary-devices').focus();
      return;
    }
    body = { base, vary };
    url = '/compare';
  }
  const seq = ++state.seq;
  showStatus(`Submitting the ${kind === 'compare' ? 'comparison' : 'search'}…`, 0);
  setBusy(true);
  let resp;
  try {
    resp = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json', Prefer: 'respond-async' },
      body: JSON.stringify(body),
    });
  } catch (e) {
    setBusy(false);
    show($('#status'), false);
    showError(new Error(`mfud did not answer POST ${url}: is the daemon running?`));
    return;
  }
  if (seq !== state.seq) return;
  if (!resp.ok) {
    setBusy(false);
    show($('#status'), false);
    showError(await problemOf(resp));
    return;
  }
  const doc = await resp.json();
  const etag = resp.headers.get('ETag');
  remember(doc.id, kind === 'compare' ? body : base);
  state.query = queryHash(kind);
  const target = `#/results/${doc.id}`;
  if (how === 'replace') history.replaceState(null, '', target);
  else if (location.hash !== target) history.pushState(null, '', target);
  await showResult(doc.id, 1, { doc, etag, focus: true, seq });
}

function setBusy(on) {
  for (const b of document.querySelectorAll('#request button[type="submit"]')) b.disabled = on;
  $('#request').setAttribute('aria-busy', on ? 'true' : 'false');
}
function showStatus(text, progress) {
  show($('#status'), true);
  $('#status-text').textContent = text;
  const p = $('#progress');
  if (progress === null) p.removeAttribute('value');
  else p.value = progress;
}
function statusText(doc) {
  const p = doc.progress || 0;
  if (doc.status === 'queued') return 'Queued: waiting for a worker…';
  if (doc.status === 'running')
    return `Running: ${pct(p, 0)} of the space, ${fmtInt(doc.evaluated || 0)} configurations evaluated…`;
  return doc.status;
}

/* GET /results/ID until done: If-None-Match with the last ETag, so an unchanged job
 * answers 304 (no body). cache: no-store so the 304 reaches us, not the HTTP cache. */
async function poll(id, seq, doc, etag) {
  for (;;) {
    if (seq !== state.seq) return null;
    if (doc && (doc.status === 'done' || doc.status === 'failed')) return doc;
    if (doc) showStatus(statusText(doc), doc.status === 'running' ? doc.progress || 0 : null);
    if (doc) await new Promise((r) => setTimeout(r, POLL_MS));
    if (seq !== state.seq) return null;
    const headers = { Accept: 'application/json' };
    if (etag) headers['If-None-Match'] = etag;
    let resp;
    try {
      resp = await fetch('/results/' + id, { headers, cache: 'no-store' });
    } catch (e) {
      throw new Error('mfud stopped answering while the search ran: is the daemon running?');
    }
    if (resp.status === 304) continue;
    if (!resp.ok) throw await problemOf(resp);
    etag = resp.headers.get('ETag') || etag;
    doc = await resp.json();
  }
}

/* ---- a result ------------------------------------------------------------------------------- */

async function showResult(id, rank, opts = {}) {
  const seq = opts.seq || ++state.seq;
  show($('#welcome'), false);
  if (state.id !== id) {
    show($('#result'), false);
    show($('#compare'), false);
  }
  clearError();
  let doc;
  try {
    doc = await poll(id, seq, opts.doc || null, opts.etag || null);
  } catch (e) {
    if (seq === state.seq) {
      setBusy(false);
      show($('#status'), false);
      showError(e);
    }
    return;
  }
  if (!doc) return;
  setBusy(false);
  show($('#status'), false);
  if (doc.status === 'failed') {
    showError(doc.error ? new Problem(doc.error) : new Error('the search failed'));
    loadRecent();
    return;
  }
  const changed = state.id !== id;
  state.id = id;
  state.doc = doc;
  if (changed) state.rooflineFor = null;
  if (doc.result && doc.result.kind === 'compare') renderCompare(doc, opts.focus);
  else renderSearch(doc, rank, opts.focus);
  if (changed) loadRecent();
}

function renderSearch(doc, rank, focus) {
  const r = doc.result;
  show($('#compare'), false);
  show($('#result'), true);
  const model = r.model.name || 'model';
  const hw = r.hardware.name || 'hardware';
  $('#result-title').textContent = `${model} on ${fmtInt(r.devices)} × ${hw}`;
  const s = r.search || {};
  const bits = [
    `Roofline MFU ${pct(r.roofline.mfu)} (one device, ideal)`,
    `seq ${fmtInt(r.roofline.seq_len)}, batch ${binary(r.roofline.global_batch_tokens)} tokens`,
    `${fmtInt(s.evaluated || 0)} configurations evaluated of ${fmtInt(s.space_size || 0)}, ${fmtInt(s.feasible || 0)} fit`,
    `${r.configs.length} ranked by ${s.rank_by || 'expected'} step time`,
  ];
  $('#result-summary').textContent = bits.join(' · ') + '.';
  const notes = [];
  if (s.truncated) notes.push(`The search stopped early (${s.truncated_by}): the ranking covers what it evaluated.`);
  if (s.ties_with_best) notes.push(`${s.ties_with_best} configurations tie with the best: their expected intervals overlap, so the model cannot tell them apart (tier 1).`);
  if (r.no_fit) notes.push('Nothing fits: ' + r.no_fit.reason);
  if (r.measured) notes.push(`Measured run: ${pct(r.measured.mfu)} MFU.`);
  $('#result-notes').textContent = notes.join(' ');
  show($('#result-notes'), notes.length > 0);
  const share = `#/results/${doc.id}`;
  $('#share-result').href = share;
  $('#share-query').href = state.query || '#';
  show($('#share-query-wrap'), Boolean(state.query));
  $('#csv-link').href = `/results/${doc.id}?format=csv`;
  $('#json-link').href = `/results/${doc.id}`;

  const tb = $('#configs tbody');
  tb.replaceChildren();
  for (const c of r.configs) {
    const e = c.expected || {};
    const iv = mfuInterval(e);
    const m = c.memory;
    const btn = el('button', { type: 'button', class: 'rank', 'data-rank': c.rank, 'aria-pressed': 'false',
      'aria-label': `Rank ${c.rank}: show its charts` }, String(c.rank));
    btn.addEventListener('click', () => selectRank(c.rank, true));
    const tr = el('tr', { 'data-rank': c.rank },
      el('th', { scope: 'row' }, btn),
      el('td', { title: layoutWords(c.parallel) }, el('span', { class: 'mono', text: layout(c.parallel) }),
        c.parallel.sp || c.parallel.zero ? el('small', { text: [c.parallel.sp ? ' sp' : '', c.parallel.zero ? ` z${c.parallel.zero}` : ''].join('') }) : null),
      el('td', { text: schedule(c) }),
      el('td', { class: 'num', text: String(c.mbs) }),
      el('td', { text: recompute(c) }),
      el('td', { class: 'num', title: `stage ${m.stage}: ${gb(m.headroom_bytes)} GB headroom` }, `${gb(m.total_bytes)} / ${gb(m.capacity_bytes)}`),
      el('td', { class: 'num', title: e.tokens_per_s ? `${si(e.tokens_per_s / r.devices)} tokens/s per device` : null },
        e.tokens_per_s ? si(e.tokens_per_s) : '–'),
      el('td', { class: 'num' }, el('strong', { text: pct(e.mfu) }),
        iv ? el('small', { text: ` ${(100 * iv[0]).toFixed(1)}–${(100 * iv[1]).toFixed(1)}` }) : null),
      el('td', {}, String(c.tier || ''), c.tie_with_best ? el('span', { class: 'tag', title: 'its expected interval overlaps the best one', text: 'tie' }) : null),
      el('td', { text: (c.frameworks || []).join(', ') || 'none modelled' }),
    );
    tr.addEventListener('click', (ev) => {
      if (ev.target.closest('button')) return;
      selectRank(c.rank, true);
    });
    tb.append(tr);
  }
  if (!r.configs.length) {
    tb.append(el('tr', {}, el('td', { colspan: '10', text: r.no_fit ? r.no_fit.reason : 'No configuration fits.' })));
    show($('#detail'), false);
  } else {
    show($('#detail'), true);
    const want = r.configs.some((c) => c.rank === rank) ? rank : 1;
    selectRank(want, false);
  }
  if (focus) $('#result-title').focus();
}

function selectRank(rank, user) {
  const doc = state.doc;
  if (!doc || !doc.result || !doc.result.configs) return;
  const c = doc.result.configs.find((x) => x.rank === rank);
  if (!c) return;
  state.rank = rank;
  for (const tr of document.querySelectorAll('#configs tbody tr')) {
    const on = Number(tr.dataset.rank) === rank;
    tr.classList.toggle('selected', on);
    const b = tr.querySelector('button.rank');
    if (b) b.setAttribute('aria-pressed', on ? 'true' : 'false');
  }
  const target = rank === 1 ? `#/results/${doc.id}` : `#/results/${doc.id}?rank=${rank}`;
  if (location.hash !== target) history.replaceState(null, '', target);
  $('#share-result').href = target;
  const e = c.expected || {};
  $('#detail-title').textContent = `Rank ${rank}: ${layoutWords(c.parallel)}`;
  const losses = (c.gap_expected || []).filter((g) => g.mfu_points > 0)
    .sort((a, b) => b.mfu_points - a.mfu_points).slice(0, 3)
    .map((g) => `${g.name.replace(/_/g, ' ')} ${g.mfu_points.toFixed(1)} points`);
  $('#detail-summary').textContent = [
    `Expected ${pct(e.mfu)} MFU, ${seconds(e.step_time_s)} per step (bound ${pct(c.bound.mfu)}, ${seconds(c.bound.step_time_s)})`,
    `${c.grad_accum} micro-batches of ${c.mbs} per step`,
    losses.length ? `largest losses: ${losses.join(', ')}` : '',
  ].filter(Boolean).join('; ') + '.';
  const base = `/results/${doc.id}/charts`;
  chart('#fig-gap', `${base}/gap.svg?rank=${rank}`, `Gap waterfall of rank ${rank}`);
  chart('#fig-memory', `${base}/memory.svg?rank=${rank}`, `Memory per pipeline stage of rank ${rank}`);
  chart('#fig-timeline', `${base}/timeline.svg?rank=${rank}`, `Timeline of one step of rank ${rank}`);
  if (doc.result.measured) {
    show($('#fig-measured'), true);
    chart('#fig-measured', `${base}/gap.svg?rank=0`, 'Gap waterfall of the measured run');
  } else {
    show($('#fig-measured'), false);
  }
  const args = c.megatron_args;
  show($('#recipe'), Boolean(args));
  $('#recipe-args').textContent = args || '';
  if (state.rooflineFor !== doc.id) roofline(doc);
  if (user) document.querySelector(`#configs button.rank[data-rank="${rank}"]`).focus();
}

/* An <img> of an SVG route. Alt text, caption and description come from the SVG's own
 * <title> and <desc> (the charts carry them for this), fetched once; the image then
 * loads from the HTTP cache (the charts of a done result are immutable). */
async function chart(fig, src, fallback) {
  const f = $(fig);
  const img = f.querySelector('img');
  const cap = f.querySelector('figcaption');
  const desc = f.querySelector('.desc');
  f.dataset.src = src; /* the latest wanted: an older fetch finishing late is dropped */
  f.classList.add('loading');
  img.alt = fallback;
  cap.textContent = fallback;
  desc.textContent = '';
  let text = null;
  try {
    const resp = await fetch(src, { headers: { Accept: 'image/svg+xml' } });
    if (resp.ok) text = await resp.text();
  } catch (e) {
    text = null;
  }
  if (f.dataset.src !== src) return;
  if (text) describeFigure(f, text, fallback);
  f.querySelector('a').href = src;
  img.src = src;
  await img.decode().catch(() => {});
  f.classList.remove('loading');
}
function describeFigure(f, svgText, fallback) {
  const svg = new DOMParser().parseFromString(svgText, 'image/svg+xml');
  const title = svg.querySelector('svg > title');
  const d = svg.querySelector('svg > desc');
  const t = title ? title.textContent.trim() : fallback;
  const img = f.querySelector('img');
  img.alt = t + (d ? '. ' + d.textContent.trim() : '');
  const w = Number(svg.documentElement.getAttribute('width')), h = Number(svg.documentElement.getAttribute('height'));
  if (w > 0 && h > 0) {
    img.width = w;
    img.height = h;
  }
  f.querySelector('figcaption').textContent = t;
  f.querySelector('.desc').textContent = d ? d.textContent.trim() : '';
}

/* The roofline: POST /roofline with the request, answered as SVG. The request is the one
 * this browser submitted; for a result opened from a link it is rebuilt from the result
 * (its resolved model and hardware, sequence, batch and convention) and the dtype is the
 * one whose roofline step time equals the result's. */
async function roofline(doc) {
  const seq = state.seq;
  state.rooflineFor = doc.id;
  const f = $('#fig-roofline');
  const img = f.querySelector('img');
  f.classList.add('loading');
  img.alt = 'The roofline (loading)';
  f.querySelector('figcaption').textContent = 'Roofline (loading)';
  f.querySelector('.desc').textContent = '';
  let req = recall(doc.id), note = '';
  try {
    if (!req) [req, note] = await rebuildRequest(doc.result);
    const resp = await fetch('/roofline', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'image/svg+xml' },
      body: JSON.stringify(req),
    });
    if (!resp.ok) throw await problemOf(resp);
    const text = await resp.text();
    if (seq !== state.seq) return;
    const old = img.src;
    const url = URL.createObjectURL(new Blob([text], { type: 'image/svg+xml' }));
    describeFigure(f, text, 'Roofline');
    if (note) f.querySelector('.desc').textContent += ' ' + note;
    f.querySelector('a').href = url;
    img.src = url;
    await img.decode().catch(() => {});
    if (old.startsWith('blob:')) URL.revokeObjectURL(old);
  } catch (e) {
    if (seq !== state.seq) return;
    f.querySelector('figcaption').textContent = 'Roofline: not available';
    f.querySelector('.desc').textContent = e.message;
    img.removeAttribute('src');
    img.alt = 'Roofline: not available. ' + e.message;
  }
  f.classList.remove('loading');
}
async function rebuildRequest(r) {
  const preset = (list, name) => list.some((x) => x.name === name);
  const model = r.model.source === 'preset' && preset(state.models, r.model.name) ? { preset: r.model.name } : r.model.resolved.ir;
  const hardware = preset(state.hardware, r.hardware.name) ? { preset: r.hardware.name } : r.hardware;
  const req = (dtype) => ({
    model, hardware, mfu_convention: r.roofline.convention,
    training: { seq_len: r.roofline.seq_len, global_batch_tokens: r.roofline.global_batch_tokens, dtype },
  });
  for (const dtype of ['bf16', 'fp8', 'fp16', 'fp32']) {
    if (!r.hardware.peak_flops || !r.hardware.peak_flops[dtype]) continue;
    const resp = await fetch('/roofline', {
      method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json' }, body: JSON.stringify(req(dtype)),
    });
    if (!resp.ok) continue;
    const got = await resp.json();
    if (Math.abs(got.roofline.step_time_s - r.roofline.step_time_s) <= 1e-9 * r.roofline.step_time_s) return [req(dtype), ''];
  }
  return [req('bf16'), '(Rebuilt from the result: the training options were not all recoverable, so this is approximate.)'];
}

/* ---- a comparison ----------------------------------------------------------------------------- */

function renderCompare(doc, focus) {
  const r = doc.result;
  show($('#result'), false);
  show($('#compare'), true);
  const v0 = r.variants[0] || {};
  const base = recall(doc.id);
  const name = base && base.base && base.base.model && base.base.model.preset;
  $('#compare-title').textContent = `Comparison of ${r.n_variants} variants${name ? ' of ' + name : ''}`;
  const fast = r.variants[r.fastest - 1], cheap = r.cheapest ? r.variants[r.cheapest - 1] : null;
  $('#compare-summary').textContent = [
    fast ? `Fastest: #${r.fastest} (${variantName(fast)}), ${si(fast.tokens_per_s)} tokens/s` : 'No variant fits.',
    cheap && cheap.time_to_train && cheap.time_to_train.cost !== undefined ? `cheapest: #${r.cheapest} (${variantName(cheap)}), ${money(cheap.time_to_train.cost, cheap.time_to_train.currency)}` : '',
    v0.seq_len ? `seq ${fmtInt(v0.seq_len)}, batch ${binary(v0.global_batch_tokens)} tokens` : '',
  ].filter(Boolean).join('; ') + '.';
  $('#share-compare').href = `#/results/${doc.id}`;
  $('#compare-json').href = `/results/${doc.id}`;
  const tb = $('#variants tbody');
  tb.replaceChildren();
  r.variants.forEach((v, i) => {
    const n = i + 1;
    const marks = [n === r.fastest ? 'fastest' : '', n === r.cheapest ? 'cheapest' : ''].filter(Boolean);
    const t = v.time_to_train;
    const tr = el('tr', { class: marks.length ? 'best' : '' },
      el('th', { scope: 'row', text: String(n) }),
      el('td', {}, variantName(v), ...marks.map((m) => el('span', { class: 'tag', text: m }))),
      v.fits
        ? el('td', { title: layoutWords(v.best.parallel) }, el('span', { class: 'mono', text: layout(v.best.parallel) }), ` ${schedule(v.best)}`)
        : el('td', { text: 'does not fit' }),
      el('td', { class: 'num', text: v.fits ? si(v.tokens_per_s) : '–' }),
      el('td', { class: 'num', text: v.fits ? si(v.tokens_per_s_per_device) : '–' }),
      el('td', { class: 'num', text: v.fits ? pct(v.mfu) : '–' }),
      el('td', { class: 'num' }, v.fits ? seconds(v.step_time_s) : '–',
        v.fits && v.step_time_low_s ? el('small', { text: ` ${v.step_time_low_s.toFixed(2)}–${v.step_time_high_s.toFixed(2)}` }) : null),
      el('td', { class: 'num', text: v.fits && t ? t.wall_clock_days.toFixed(1) : '–' }),
      el('td', { class: 'num', text: v.fits && t && t.cost !== undefined ? money(t.cost, t.currency) : '–' }),
      el('td', {}, v.search_id ? el('a', { href: `#/results/${v.search_id}`, text: 'ranking' }) : '–'),
    );
    tb.append(tr);
  });
  chart('#fig-compare', `/results/${doc.id}/charts/compare.svg`, 'Comparison of the variants');
  if (focus) $('#compare-title').focus();
}
function variantName(v) {
  const parts = [];
  const vary = v.vary || {};
  if (vary.hardware) parts.push(v.hardware);
  if (vary.devices) parts.push(`${fmtInt(v.devices)} devices`);
  if (vary.seq_len) parts.push(`seq ${fmtInt(v.seq_len)}`);
  if (vary.global_batch_tokens) parts.push(`batch ${binary(v.global_batch_tokens)}`);
  if (vary.dtype) parts.push(v.dtype);
  return parts.join(', ') || `${v.hardware} × ${v.devices}`;
}

/* ---- recent results --------------------------------------------------------------------------- */

async function loadRecent() {
  let list;
  try {
    list = await getJSON('/results?limit=15');
  } catch (e) {
    return; /* the list is a convenience: the error shows where the user acted */
  }
  const ol = $('#recent');
  ol.replaceChildren(...list.items.map((it) => {
    /* an uploaded trace or a calibrated profile is a stored document, not
       a search the page renders: a link to its JSON */
    const doc = it.hardware === 'trace' ? 'traces' : it.hardware === 'profile' ? 'profiles' : null;
    const what = doc === 'traces' ? `${it.model || 'trace'}: profiler trace`
      : doc ? `${it.model || 'hardware'}: calibrated profile`
      : it.hardware === 'compare' ? `${it.model}: comparison`
      : `${it.model} on ${fmtInt(it.devices)} × ${it.hardware}`;
    const when = new Date(it.created_at);
    return el('li', { class: it.id === state.id ? 'current' : '' },
      el('a', { href: doc ? `/${doc}/${it.id}` : `#/results/${it.id}`, 'aria-current': it.id === state.id ? 'page' : null, text: what }),
      el('span', { class: 'hint' }, ' ',
        it.status !== 'done' ? it.status : it.best_mfu !== null ? pct(it.best_mfu) + ' MFU' : '',
        ' · ', el('time', { datetime: it.created_at, text: when.toLocaleTimeString('en-GB', { hour12: false }) })));
  }));
  show($('#recent-empty'), list.items.length === 0);
}

/* ---- the router ------------------------------------------------------------------------------- */

async function route() {
  const h = location.hash.replace(/^#/, '') || '/';
  const [path, query] = h.split('?');
  const q = new URLSearchParams(query || '');
  const m = /^\/results\/([0-9a-f]{64})$/.exec(path);
  if (m) {
    const rank = Number.parseInt(q.get('rank') || '1', 10) || 1;
    if (state.doc && state.id === m[1] && state.doc.status === 'done') {
      if (state.doc.result.kind === 'compare') renderCompare(state.doc, false);
      else renderSearch(state.doc, rank, false);
      return;
    }
    if (state.id !== m[1]) state.query = null;
    await showResult(m[1], rank);
    return;
  }
  if (path === '/search' || path === '/compare') {
    fillForm(q);
    await submit(path.slice(1), 'replace');
    return;
  }
  state.seq++;
  show($('#result'), false);
  show($('#compare'), false);
  show($('#status'), false);
  show($('#welcome'), true);
}

async function main() {
  const form = $('#request');
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const kind = e.submitter && e.submitter.value === 'compare' ? 'compare' : 'search';
    submit(kind, 'push');
  });
  $('#model').addEventListener('change', describeModel);
  $('#hardware').addEventListener('change', describeHardware);
  $('#batch').addEventListener('input', describeBatch);
  $('#seq_len').addEventListener('input', describeBatch);
  $('#hf-file').addEventListener('change', (e) => loadHF(e.target.files[0]));
  $('#hf-clear').addEventListener('click', clearHF);
  $('#recent-refresh').addEventListener('click', loadRecent);
  window.addEventListener('hashchange', route);
  describeBatch();
  try {
    await loadPresets();
  } catch (e) {
    showError(e);
    return;
  }
  loadRecent();
  await route();
  document.body.dataset.ready = 'true';
}

main();

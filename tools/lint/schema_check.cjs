#!/usr/bin/env node
/* tools/lint/schema_check.cjs -- a strict-typed client's view of mfud's
 * answers: JSON documents validated against openapi.yaml's schemas by a real
 * JSON Schema 2020-12 validator (ajv, pinned in tools/lint/package.json),
 * with integers told from reals the way Go's encoding/json or Rust's serde
 * tell them: a number written with a fraction or an exponent (`1024.0`,
 * `1e3`) is not an integer, whatever its value. JavaScript's JSON.parse
 * loses that difference, so the documents are also scanned here, and every
 * schema whose type is integer carries a keyword that rejects a number
 * written as a real at that place.
 *
 *   schema_check.cjs OPENAPI RESPONSES.tsv
 *       each line METHOD<TAB>PATH<TAB>CODE<TAB>CONTENT-TYPE<TAB>HEADERS<TAB>BODY
 *       (tests/integration/http.sh records them): every JSON body against
 *       the schema of its route, method, status and media type
 *   schema_check.cjs --schema NAME OPENAPI FILE...
 *       each FILE against components/schemas/NAME
 *   schema_check.cjs --examples OPENAPI
 *       every `example` of the contract against its schema
 *
 * Prints one FAIL line per problem and ends with "N passed, N failed";
 * exits 1 when anything failed, 2 on a usage error.
 */
'use strict';
const fs = require('fs');
const Ajv2020 = require('ajv/dist/2020').default;
const addFormats = require('ajv-formats').default;
const YAML = require('yaml');

/* ---- where a document wrote reals ------------------------------------------
 * The RFC 6901 pointers of every number with a fraction or an exponent. */
function realPointers(text) {
  const reals = new Set();
  let i = 0;
  const ws = () => { while (i < text.length && ' \t\r\n'.includes(text[i])) i++; };
  const esc = (k) => k.replace(/~/g, '~0').replace(/\//g, '~1');
  const fail = (what) => { throw new SyntaxError(what + ' at offset ' + i); };
  function str() {
    const start = i;
    i++; // the opening quote
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    if (i >= text.length) fail('unterminated string');
    i++;
    return JSON.parse(text.slice(start, i));
  }
  function value(ptr) {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      ws();
      if (text[i] === '}') { i++; return; }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a key');
        const k = str();
        ws();
        if (text[i] !== ':') fail('expected :');
        i++;
        value(ptr + '/' + esc(k));
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === '}') { i++; return; }
        fail('expected , or }');
      }
    } else if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') { i++; return; }
      for (let n = 0; ; n++) {
        value(ptr + '/' + n);
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === ']') { i++; return; }
        fail('expected , or ]');
      }
    } else if (c === '"') {
      str();
    } else {
      const m = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?|^(true|false|null)/.exec(text.slice(i, i + 400));
      if (!m) fail('unexpected character');
      if (m[2] !== undefined || m[3] !== undefined) reals.add(ptr);
      i += m[0].length;
    }
  }
  value('');
  ws();
  if (i !== text.length) fail('trailing characters');
  return reals;
}

/* ---- the contract as one JSON Schema ------------------------------------- */

/* Every schema whose type admits integer gets x-integer-literal. (A walk
 * over all objects also marks the rare property named "type" inside
 * `properties` only when its value is a schema's type string, which is
 * harmless: the keyword checks numbers only.) */
function markIntegers(s) {
  if (Array.isArray(s)) { s.forEach(markIntegers); return; }
  if (!s || typeof s !== 'object') return;
  const t = s.type;
  if (t === 'integer' || (Array.isArray(t) && t.includes('integer'))) s['x-integer-literal'] = true;
  Object.values(s).forEach(markIntegers);
}

let currentReals = new Set();

function loadContract(path) {
  const doc = YAML.parse(fs.readFileSync(path, 'utf8'));
  // OpenAPI 3.1 schemas are JSON Schema 2020-12: put them under $defs of
  // one schema and point the references there
  const defs = JSON.parse(JSON.stringify(doc.components.schemas), (k, v) =>
    k === '$ref' && typeof v === 'string' ? v.replace('#/components/schemas/', '#/$defs/') : v);
  markIntegers(defs);
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, strictTuples: false, strictRequired: false });
  addFormats(ajv);
  ajv.addKeyword({ keyword: 'example', schemaType: ['object', 'array', 'string', 'number', 'boolean', 'null'] });
  ajv.addKeyword({
    keyword: 'x-integer-literal',
    schemaType: 'boolean',
    errors: false,
    validate: (on, data, parent, cxt) =>
      !on || typeof data !== 'number' || !currentReals.has(cxt ? cxt.instancePath : ''),
  });
  ajv.addSchema({ $id: 'mfud', $defs: defs });
  return { doc, ajv };
}

function schemaRef(ref) {
  return 'mfud' + ref.replace('#/components/schemas/', '#/$defs/');
}

/* Validate text (a JSON document) against the schema at ref; returns
 * a list of messages. */
function check(ajv, ref, text, where) {
  let data;
  try {
    data = JSON.parse(text);
    currentReals = realPointers(text);
  } catch (e) {
    return [where + ': not JSON: ' + e.message];
  }
  const v = ajv.getSchema(ref);
  if (!v) return [where + ': no schema ' + ref];
  if (v(data)) return [];
  return v.errors.slice(0, 20).map((e) => {
    const msg = e.keyword === 'x-integer-literal'
      ? 'a number written as a real (with a fraction or an exponent) where the schema says integer'
      : e.message + (e.params && e.params.additionalProperty ? ' (' + e.params.additionalProperty + ')' : '');
    return where + ' ' + (e.instancePath || '/') + ': ' + msg;
  });
}

/* The schema of an inline or $ref'd schema object, as an ajv reference. */
const inlineIds = new Map();
function inlineRef(ajv, schema, key) {
  if (schema.$ref) return schemaRef(schema.$ref);
  if (!inlineIds.has(key)) inlineIds.set(key, 'inline-' + inlineIds.size);
  const id = inlineIds.get(key);
  if (!ajv.getSchema(id)) {
    const s = JSON.parse(JSON.stringify(schema), (k, v) =>
      k === '$ref' && typeof v === 'string' ? v.replace('#/components/schemas/', 'mfud#/$defs/') : v);
    markIntegers(s);
    ajv.addSchema(Object.assign({ $id: id }, s));
  }
  return id;
}

function resolveResponse(doc, r) {
  if (r && r.$ref) {
    const name = r.$ref.replace('#/components/responses/', '');
    return doc.components.responses[name];
  }
  return r;
}

function matchPath(doc, path) {
  path = path.split('?')[0];
  for (const [tmpl, item] of Object.entries(doc.paths)) {
    const rx = new RegExp('^' + tmpl.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+') + '$');
    if (rx.test(path)) return [tmpl, item];
  }
  return [null, null];
}

function responses(doc, ajv, tsv) {
  let passed = 0, failed = 0;
  for (const line of fs.readFileSync(tsv, 'utf8').split('\n')) {
    const p = line.split('\t');
    if (p.length !== 6) continue;
    const [method, path, code, ctype, , bodyFile] = p;
    const where = method + ' ' + path + ' ' + code;
    const media = ctype.split(';')[0].trim().toLowerCase();
    const [tmpl, item] = matchPath(doc, path);
    let resp;
    if (!tmpl) resp = doc.components.responses.NotFound;
    else if (!item[method.toLowerCase()]) resp = doc.components.responses.MethodNotAllowed;
    else resp = resolveResponse(doc, item[method.toLowerCase()].responses[code]);
    if (!resp) { console.log('FAIL ' + where + ': status not documented'); failed++; continue; }
    const body = fs.readFileSync(bodyFile, 'utf8');
    if (!media.endsWith('json')) { passed++; continue; } // CSV, text, YAML, Markdown
    const mt = resp.content && resp.content[media];
    if (!mt) { console.log('FAIL ' + where + ': media type ' + media + ' not documented'); failed++; continue; }
    const errs = check(ajv, inlineRef(ajv, mt.schema, tmpl + method + code + media), body, where);
    errs.forEach((e) => console.log('FAIL ' + e));
    if (errs.length) failed++; else passed++;
  }
  return [passed, failed];
}

function examples(doc, ajv) {
  let passed = 0, failed = 0;
  const seen = [];
  (function walk(node, ptr) {
    if (Array.isArray(node)) { node.forEach((x, i) => walk(x, ptr + '/' + i)); return; }
    if (!node || typeof node !== 'object') return;
    // a media type object, or a schema with an example
    if ('example' in node && (node.schema || node.type || node.$ref || node.properties)) {
      const schema = node.schema || node;
      seen.push([ptr, schema, node.example]);
    }
    for (const [k, v] of Object.entries(node)) if (k !== 'example') walk(v, ptr + '/' + k);
  })(doc, '#');
  for (const [ptr, schema, ex] of seen) {
    const s = Object.assign({}, schema);
    delete s.example;
    const errs = check(ajv, inlineRef(ajv, s, 'example' + ptr), JSON.stringify(ex), 'example ' + ptr);
    errs.forEach((e) => console.log('FAIL ' + e));
    if (errs.length) failed++; else passed++;
  }
  return [passed, failed];
}

function main(argv) {
  let passed = 0, failed = 0;
  if (argv[0] === '--schema' && argv.length >= 4) {
    const { ajv } = loadContract(argv[2]);
    for (const f of argv.slice(3)) {
      const errs = check(ajv, schemaRef('#/components/schemas/' + argv[1]), fs.readFileSync(f, 'utf8'), f);
      errs.forEach((e) => console.log('FAIL ' + e));
      if (errs.length) failed++; else passed++;
    }
  } else if (argv[0] === '--examples' && argv.length === 2) {
    const { doc, ajv } = loadContract(argv[1]);
    [passed, failed] = examples(doc, ajv);
  } else if (argv.length === 2 && !argv[0].startsWith('-')) {
    const { doc, ajv } = loadContract(argv[0]);
    [passed, failed] = responses(doc, ajv, argv[1]);
  } else {
    console.log(fs.readFileSync(__filename, 'utf8').split('*/')[0]);
    return 2;
  }
  console.log(passed + ' passed, ' + failed + ' failed');
  return failed ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));

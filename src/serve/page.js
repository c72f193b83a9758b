// prefixsim serve: the page's script. Builds the controls from /api/controls (the common ones
// at the top, then every key of the experiment in a collapsible section), runs the settings
// through /api/run on every change (the previous request aborted), shows a refused setting's
// message beside its control, keeps the URL equal to the settings (shareable), and streams a
// sweep from /api/sweep, restarted when a setting changes. Plain JS, no library: the page works
// offline.
'use strict';

const $ = (id) => document.getElementById(id);
let base = null; // /api/controls: the starting experiment
let runAbort = null;
let sweepAbort = null;
let debounce = null;

const NUMBER_KEYS = { agents: 'workload.agents', concurrency: 'workload.concurrency',
  replications: 'replications', seed: 'seed' };
const SELECT_KEYS = { model: 'model', policy: 'cache.policy', ttl: 'cache.ttl' };
// Keys the common controls above set: not repeated in the sections of every key.
const COMMON_KEYS = new Set([...Object.values(NUMBER_KEYS), ...Object.values(SELECT_KEYS),
  'latency.preset', 'strategies']);

function option(select, value, label) {
  const o = document.createElement('option');
  o.value = value;
  o.textContent = label === undefined ? value : label;
  select.appendChild(o);
}

// ---------------------------------------------------------------- strategies

// "wait_first(max_wait=2s, release=timer)" -> {family, args: {max_wait: "2s", release: "timer"}}
function parseStrategy(label) {
  const m = label.match(/^([a-z_]+)(?:\((.*)\))?$/);
  const args = {};
  if (m && m[2]) {
    for (const part of m[2].split(',')) {
      const [k, v] = part.split('=').map((s) => s.trim());
      args[k] = v;
    }
  }
  return { family: m ? m[1] : label, args };
}

// "2s", "500ms", "1m" -> seconds
function seconds(text) {
  const m = String(text).match(/^([0-9.]+)\s*(ms|s|m|h)?$/);
  if (!m) return NaN;
  const scale = { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2] || 's'];
  return Number(m[1]) * scale;
}

const CAPS = { wait_first: ['max_wait', 5], stagger: ['interval', 1] };

function addStrategyRow(label, checked) {
  const { family, args } = parseStrategy(label);
  const row = document.createElement('div');
  row.className = 'strategy';
  row.dataset.family = family;
  row.dataset.extra = family === 'wait_first' && args.release ? args.release : '';
  const box = document.createElement('input');
  box.type = 'checkbox';
  box.checked = checked;
  const name = document.createElement('span');
  name.className = 'name';
  name.textContent = family + (row.dataset.extra ? ' (release=' + row.dataset.extra + ')' : '');
  row.append(box, name);
  const cap = CAPS[family];
  if (cap) {
    const input = document.createElement('input');
    input.type = 'number';
    input.min = '0';
    input.step = '0.5';
    input.title = cap[0] + ' (s)';
    input.value = String(args[cap[0]] !== undefined ? seconds(args[cap[0]]) : cap[1]);
    row.append(input, document.createTextNode(cap[0] + ' s'));
  }
  $('strategies').appendChild(row);
}

function strategyLabels() {
  const out = [];
  for (const row of $('strategies').children) {
    if (!row.querySelector('input[type=checkbox]').checked) continue;
    const family = row.dataset.family;
    const cap = CAPS[family];
    if (!cap) { out.push(family); continue; }
    const v = row.querySelector('input[type=number]').value;
    let args = cap[0] + '=' + v + 's';
    if (row.dataset.extra) args += ', release=' + row.dataset.extra;
    out.push(family + '(' + args + ')');
  }
  return out;
}

function setStrategies(labels) {
  $('strategies').textContent = '';
  for (const l of labels) addStrategyRow(l, true);
  for (const l of base.values.strategies) if (!labels.includes(l)) addStrategyRow(l, false);
}

// ---------------------------------------------------------------- settings <-> controls

function buildControls() {
  $('name').textContent = base.name + ' (' + base.origin + ')';
  $('question').textContent = base.question;
  const p = base.prefix;
  $('prefix-hint').textContent = p.brief_tokens > 0
    ? p.line_key + ' and the brief (workload.brief_tokens = ' + p.brief_tokens + ') together'
    : p.line_key;
  buildKeySections();
  const common = { ...NUMBER_KEYS, ...SELECT_KEYS, latency: 'latency.preset', 'add-family': 'strategies' };
  for (const [id, key] of Object.entries(common)) {
    const error = document.createElement('span');
    error.className = 'error';
    error.dataset.errorFor = key;
    $(id).closest('label').after(error);
  }
  for (const [id, key] of Object.entries(SELECT_KEYS)) {
    for (const v of base.choices[key]) option($(id), v);
  }
  for (const p of base.choices['latency.preset']) option($('latency'), 'preset:' + p, 'preset ' + p);
  base.calibrations.forEach((f, i) => option($('latency'), 'file:' + i, 'file ' + f.split('/').pop()));
  for (const f of base.choices.strategy) option($('add-family'), f);
  for (const k of base.keys) if (k.key !== 'strategies') option($('sweep-key'), k.key);
  for (const m of base.sweep_metrics) option($('sweep-metric'), m.name, m.title);
  const sd = base.sweep_default;
  $('sweep-key').value = sd ? sd.key : base.prefix.line_key;
  $('sweep-values').value = sd ? sd.values.join(', ') : suggestValues($('sweep-key').value);
  resetControls();
}

// One control per key of the experiment (/api/controls `keys`), grouped by section, each
// section collapsed: a checkbox for a true/false key, a list for a key of a few names, else
// the value as --set takes it. Each has its message line for a refusal.
function buildKeySections() {
  const sections = new Map();
  for (const k of base.keys) {
    if (COMMON_KEYS.has(k.key)) continue;
    if (!sections.has(k.section)) {
      const d = document.createElement('details');
      d.dataset.section = k.section;
      const s = document.createElement('summary');
      s.textContent = k.section;
      d.appendChild(s);
      $('all-keys').appendChild(d);
      sections.set(k.section, d);
    }
    const label = document.createElement('label');
    label.textContent = k.key;
    let input;
    if (base.choices[k.key]) {
      input = document.createElement('select');
      for (const c of base.choices[k.key]) option(input, c);
    } else {
      input = document.createElement('input');
      input.type = k.value === 'true' || k.value === 'false' ? 'checkbox' : 'text';
      if (k.value === null) input.placeholder = 'default';
    }
    input.dataset.key = k.key;
    input.dataset.initial = k.value === null ? '' : k.value;
    const error = document.createElement('span');
    error.className = 'error';
    error.dataset.errorFor = k.key;
    label.append(input, error);
    sections.get(k.section).appendChild(label);
  }
}

function keyInputs() {
  return $('all-keys').querySelectorAll('[data-key]');
}

function keyValue(input) {
  return input.type === 'checkbox' ? String(input.checked) : input.value.trim();
}

function setKeyValue(input, text) {
  if (input.type === 'checkbox') input.checked = text === 'true';
  else input.value = text;
}

function suggestValues(key) {
  const k = base.keys.find((x) => x.key === key);
  const v = key in base.values ? base.values[key] : (k && k.value !== null ? Number(k.value) : NaN);
  if (typeof v === 'number' && v > 0) return [0.25, 0.5, 1, 2, 4].map((f) => Math.max(1, Math.round(v * f))).join(', ');
  return (base.choices[key] || []).join(', ');
}

function resetControls() {
  const v = base.values;
  $('prefix').value = base.prefix.tokens;
  for (const input of keyInputs()) setKeyValue(input, input.dataset.initial);
  for (const [id, key] of Object.entries(NUMBER_KEYS)) $(id).value = v[key];
  for (const [id, key] of Object.entries(SELECT_KEYS)) $(id).value = v[key];
  $('latency').value = 'preset:' + v['latency.preset'];
  setStrategies(v.strategies);
  $('timeline').textContent = '';
  option($('timeline'), '', v.strategies[0]);
}

// The settings that differ from the file's, as the query string of the page and the API.
function settings() {
  const q = new URLSearchParams();
  const v = base.values;
  const put = (key, value) => { if (String(value) !== String(v[key])) q.set(key, value); };
  if (String($('prefix').value) !== String(base.prefix.tokens)) q.set('prefix_tokens', $('prefix').value);
  for (const input of keyInputs()) {
    const now = keyValue(input);
    if (now !== '' && now !== input.dataset.initial) q.set(input.dataset.key, now);
  }
  for (const [id, key] of Object.entries(NUMBER_KEYS)) put(key, $(id).value);
  for (const [id, key] of Object.entries(SELECT_KEYS)) put(key, $(id).value);
  const [kind, which] = $('latency').value.split(':');
  if (kind === 'file') q.set('latency_file', which);
  else put('latency.preset', which);
  const labels = strategyLabels();
  if (labels.join('|') !== v.strategies.join('|')) {
    q.set('strategies', '[' + labels.map((l) => JSON.stringify(l)).join(', ') + ']');
  }
  if ($('timeline').value) q.set('timeline', $('timeline').value);
  return q;
}

function applyQuery(q) {
  if (q.has('prefix_tokens')) $('prefix').value = q.get('prefix_tokens');
  for (const input of keyInputs()) if (q.has(input.dataset.key)) setKeyValue(input, q.get(input.dataset.key));
  for (const [id, key] of Object.entries(NUMBER_KEYS)) if (q.has(key)) $(id).value = q.get(key);
  for (const [id, key] of Object.entries(SELECT_KEYS)) if (q.has(key)) $(id).value = q.get(key);
  if (q.has('latency.preset')) $('latency').value = 'preset:' + q.get('latency.preset');
  if (q.has('latency_file')) $('latency').value = 'file:' + q.get('latency_file');
  if (q.has('strategies')) setStrategies([...q.get('strategies').matchAll(/"([^"]*)"/g)].map((m) => m[1]));
  if (q.has('timeline')) option($('timeline'), q.get('timeline'));
  if (q.has('timeline')) $('timeline').value = q.get('timeline');
}

// ---------------------------------------------------------------- running

function status(el, state, text) {
  el.dataset.state = state;
  el.textContent = text;
}

function changed(now) {
  clearTimeout(debounce);
  debounce = setTimeout(refresh, now ? 0 : 300);
}

async function refresh() {
  // A running sweep belongs to the old settings: cancel it now, start it again after the run.
  const resweep = sweepAbort !== null;
  stopSweep();
  const q = settings().toString();
  history.replaceState(null, '', q ? '?' + q : location.pathname);
  $('link').value = location.href;
  $('export').href = '/api/export' + (q ? '?' + q : '');
  if (runAbort) runAbort.abort();
  runAbort = new AbortController();
  status($('status'), 'running', 'Running…');
  showError(null, '');
  const started = performance.now();
  try {
    const r = await fetch('/api/run?' + q, { signal: runAbort.signal });
    if (!r.ok) {
      const text = (await r.text()).trim();
      showError(settings(), text);
      throw new Error('HTTP ' + r.status + ': ' + text);
    }
    const data = await r.json();
    $('question').textContent = data.question;
    show(data, q);
    showHold(q, runAbort.signal);
    const secs = ((performance.now() - started) / 1000).toFixed(2);
    status($('status'), 'ready', data.summary.replications + ' replications x ' +
      data.summary.results.length + ' strategies, about ' + Math.round(data.work).toLocaleString() +
      ' simulated requests, answered in ' + secs + ' s (model ' + data.summary.model +
      ', policy ' + data.summary.policy + ', seed ' + data.summary.seed + ')' +
      // A latency fitted on another model (config::latency_origin), as `run` heads its table.
      (data.summary.latency_borrowed ? '; latency: ' + data.summary.latency_borrowed : ''));
  } catch (e) {
    if (e.name === 'AbortError') return;
    status($('status'), 'error', e.message);
  }
  if (resweep) startSweep();
}

// A refusal's message beside the control of the key it names (the longest key sent that the
// message names), its section opened; `q` null clears every message.
function showError(q, text) {
  for (const e of document.querySelectorAll('.error')) e.textContent = '';
  if (!q) return;
  const named = [...q.keys()].filter((k) => text.includes(k)).sort((a, b) => b.length - a.length);
  if (!named.length) return;
  const el = document.querySelector('[data-error-for="' + CSS.escape(named[0]) + '"]');
  if (!el) return;
  el.textContent = text;
  const section = el.closest('details');
  if (section) section.open = true;
}

// The cap to use (/api/hold: the same search as `prefixsim tune --param max_wait`), fetched
// after the run; empty when the experiment does not ask for it.
async function showHold(q, signal) {
  const p = $('hold');
  p.textContent = '';
  p.dataset.cap = '';
  try {
    const r = await fetch('/api/hold?' + q, { signal });
    if (!r.ok) {
      p.textContent = 'The cap to use: not computed (' + (await r.text()).trim() + ')';
      return;
    }
    const data = await r.json();
    if (!data.hold) return;
    p.dataset.cap = String(data.hold.cap_s);
    p.textContent = data.hold.sentence.charAt(0).toUpperCase() + data.hold.sentence.slice(1) + '.';
  } catch (e) {
    if (e.name !== 'AbortError') p.textContent = 'The cap to use: ' + e.message;
  }
}

function cell(tr, key, value, text) {
  const td = document.createElement('td');
  td.dataset.key = key;
  if (value !== null && value !== undefined) td.dataset.value = String(value);
  td.textContent = text;
  tr.appendChild(td);
}

function fixed(x, digits) {
  return x === null || x === undefined ? '–' : x.toFixed(digits);
}

function show(data, q) {
  const body = $('results').querySelector('tbody');
  body.textContent = '';
  for (const r of data.summary.results) {
    const tr = document.createElement('tr');
    tr.dataset.strategy = r.strategy;
    cell(tr, 'strategy', r.strategy, r.strategy);
    cell(tr, 'cost_usd', r.cost_usd, fixed(r.cost_usd, 4) + ' ± ' + fixed(r.cost_usd_ci95, 4));
    cell(tr, 'cost_relative_to_eager', r.cost_relative_to_eager, fixed(r.cost_relative_to_eager, 3));
    cell(tr, 'hit_rate', r.hit_rate, fixed(100 * r.hit_rate, 1) + '%');
    const lw = r.launch_wait_pooled_s, c = r.completion_pooled_s;
    cell(tr, 'launch_wait_p99_s', lw.p99, fixed(lw.p50, 2) + ' / ' + fixed(lw.p99, 2));
    cell(tr, 'completion_p99_s', c.p99, fixed(c.p50, 1) + ' / ' + fixed(c.p99, 1));
    cell(tr, 'makespan_s', r.makespan_s, fixed(r.makespan_s, 1));
    body.appendChild(tr);
  }
  $('results').dataset.query = q;
  const notes = $('notes');
  notes.textContent = '';
  for (const n of data.summary.notes || []) {
    const li = document.createElement('li');
    li.textContent = n;
    notes.appendChild(li);
  }
  const figs = $('figures');
  figs.textContent = '';
  for (const f of data.figures) {
    const fig = document.createElement('figure');
    fig.dataset.name = f.name;
    const div = document.createElement('div');
    div.innerHTML = f.svg; // drawn by the server's plot module
    const cap = document.createElement('figcaption');
    cap.textContent = f.caption;
    fig.append(div, cap);
    figs.appendChild(fig);
  }
  const tl = $('timeline');
  const chosen = tl.value;
  tl.textContent = '';
  data.summary.results.forEach((r, i) => option(tl, i === 0 ? '' : r.strategy, r.strategy));
  tl.value = [...tl.options].some((o) => o.value === chosen) ? chosen : '';
  $('toml').textContent = data.toml;
}

// ---------------------------------------------------------------- the sweep

function stopSweep(why) {
  if (sweepAbort) sweepAbort.abort();
  sweepAbort = null;
  if (why) status($('sweep-status'), 'idle', why);
}

async function startSweep() {
  stopSweep();
  const q = settings();
  q.delete('timeline');
  q.set('sweep_key', $('sweep-key').value);
  q.set('sweep_values', $('sweep-values').value);
  q.set('sweep_metric', $('sweep-metric').value);
  const abort = new AbortController();
  sweepAbort = abort;
  $('sweep-figure').textContent = '';
  $('sweep-table').querySelector('thead').textContent = '';
  $('sweep-table').querySelector('tbody').textContent = '';
  status($('sweep-status'), 'running', 'Sweeping ' + $('sweep-key').value + '…');
  try {
    const r = await fetch('/api/sweep?' + q, { signal: abort.signal });
    if (!r.ok) throw new Error('HTTP ' + r.status + ': ' + (await r.text()));
    await readEvents(r.body.getReader(), onSweepEvent);
  } catch (e) {
    if (e.name === 'AbortError') return;
    status($('sweep-status'), 'error', e.message);
  }
  if (sweepAbort === abort) sweepAbort = null;
}

// Server-sent events from a fetch body: blocks separated by a blank line, `event:` and
// `data:` lines (a `:` line is a keep-alive).
async function readEvents(reader, handle) {
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length) handle(event, data.join('\n'));
    }
  }
}

function onSweepEvent(event, data) {
  if (event === 'failure') { status($('sweep-status'), 'error', data); return; }
  if (event === 'done') {
    status($('sweep-status'), 'done', 'Sweep done: ' + data + ' points.');
    return;
  }
  const p = JSON.parse(data);
  $('sweep-figure').innerHTML = p.svg;
  const head = $('sweep-table').querySelector('thead');
  if (!head.children.length) {
    const tr = document.createElement('tr');
    for (const t of [$('sweep-key').value, ...p.results.map((r) => r.strategy)]) {
      const th = document.createElement('th');
      th.textContent = t;
      tr.appendChild(th);
    }
    head.appendChild(tr);
  }
  const tr = document.createElement('tr');
  cell(tr, 'value', p.value, p.value);
  for (const r of p.results) cell(tr, r.strategy, r.value, r.value.toPrecision(4));
  $('sweep-table').querySelector('tbody').appendChild(tr);
  status($('sweep-status'), 'running', 'Point ' + (p.index + 1) + ' done…');
}

// ---------------------------------------------------------------- wiring

async function init() {
  try {
    const r = await fetch('/api/controls');
    base = await r.json();
  } catch (e) {
    status($('status'), 'error', 'cannot reach the server: ' + e.message);
    return;
  }
  buildControls();
  applyQuery(new URLSearchParams(location.search));
  const form = $('controls');
  form.addEventListener('input', () => changed(false));
  form.addEventListener('change', () => changed(true));
  $('add-strategy').addEventListener('click', () => {
    const f = $('add-family').value;
    addStrategyRow(CAPS[f] ? f + '(' + CAPS[f][0] + '=' + CAPS[f][1] + 's)' : f, true);
    changed(true);
  });
  $('reset').addEventListener('click', () => { resetControls(); changed(true); });
  $('sweep-start').addEventListener('click', startSweep);
  $('sweep-stop').addEventListener('click', () => stopSweep('Stopped.'));
  $('sweep-key').addEventListener('change', () => {
    $('sweep-values').value = suggestValues($('sweep-key').value);
  });
  refresh();
}

init();

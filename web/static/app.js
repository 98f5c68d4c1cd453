// mql's web page: a client of the same API the agents use (POST /v1/query with the language,
// GET /v1/watch for changes, GET /v1/catalog and /v1/review-queue), signed in as one principal
// by an HttpOnly session cookie, so it shows what that principal may see and nothing else.
//
// Every string from the store is agent-written and hostile: it reaches the document only as
// text (textContent, createTextNode, setAttribute of a data-* or aria-* attribute), never as
// markup, and unprintable characters are shown as escapes (show). Cytoscape.js draws labels on
// a canvas, as text. No inline script or style exists, so the Content-Security-Policy can
// forbid both.
'use strict';
(function () {

  // The state colours: output.Palette's (the dot format draws with the same).
  const PALETTE = {
    'live': ['#d3f9d8', '#2b8a3e'],
    'superseded': ['#e9ecef', '#868e96'],
    'revoked': ['#ffe3e3', '#c92a2a'],
    'expired': ['#fff3bf', '#e67700'],
    'contested': ['#f3d9fa', '#862e9c'],
    'needs review': ['#ffe3e3', '#c92a2a'],
    'artifact': ['#dbe4ff', '#364fc7'],
    'source': ['#ffffff', '#495057'],
    'principal': ['#f8f9fa', '#495057'],
    'grant': ['#e3fafc', '#0b7285'],
    'revocation': ['#c92a2a', '#c92a2a'],
    'event': ['#fff9db', '#5c940d'],
  };
  const STATES = ['live', 'superseded', 'revoked', 'expired', 'contested'];
  // The selection's colour: ink, which no state or kind of node is drawn in.
  const SELECTED = '#212529';
  const EVENT_KINDS = ['principal', 'grant', 'decay', 'claim', 'revocation', 'confirmation', 'artifact', 'review', 'needs-review'];
  // A name or reference as the language writes it; anything else never reaches a script. A
  // name is as the language lexes one (letters of any script, digits, '_', ':', '/', and
  // single '-' inside); a reference is a name or Subject.predicate, with an optional @N.
  const NAME = '[\\p{L}_][\\p{L}\\p{M}\\p{Nd}_:/]*(?:-[\\p{L}\\p{M}\\p{Nd}_:/]+)*';
  const REF = new RegExp('^' + NAME + '(?:\\.' + NAME + ')?(?:@[0-9]+)?$', 'u');

  const S = {
    me: null,          // GET /v1/session
    head: 0,           // newest transaction seen
    startHead: 0,      // the head when the page signed in: later events are news
    tx: null,          // time travel: null for now, else the transaction to read as of
    catalog: null,
    events: [],        // from /v1/watch, oldest first
    txInfo: new Map(), // tx → {at, by}
    es: null,
    selected: null,    // {route, key}: the selected graph node, kept when the same view refreshes
  };

  // ---- text and elements ----

  // show returns s for a person: every character that is not printable (Go's strconv.IsPrint:
  // letters, marks, numbers, punctuation, symbols, the ASCII space) as an escape, as mql's
  // terminal formats do, so that control and bidi characters are seen and not obeyed.
  function show(s) {
    if (s === null || s === undefined) return '';
    return String(s).replace(/[^\p{L}\p{M}\p{N}\p{P}\p{S} ]/gu, (c) => {
      switch (c) {
        case '\n': return '\\n';
        case '\t': return '\\t';
        case '\r': return '\\r';
      }
      const cp = c.codePointAt(0);
      if (cp < 0x80) return '\\x' + cp.toString(16).padStart(2, '0');
      if (cp <= 0xffff) return '\\u' + cp.toString(16).padStart(4, '0');
      return '\\U' + cp.toString(16).padStart(8, '0');
    });
  }

  function valueText(c) {
    if (c.value_type === 'string') return '"' + show(c.value) + '"';
    return show(c.value);
  }

  function conf(x) {
    if (typeof x !== 'number') return '';
    const s = String(Math.round(x * 1000) / 1000);
    return s.includes('.') ? s : s + '.0';
  }

  function when(t) { return t ? show(String(t).replace('T', ' ').replace(/\.[0-9]+/, '').replace('Z', ' UTC')) : ''; }

  function stateClass(s) { return String(s || '').replace(/[^a-z]+/g, '-'); }

  // el makes an element: props set properties that cannot carry markup (text, class, data-*,
  // aria-*, href of the page's own routes); children are nodes or text.
  function el(tag, props, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k === 'on') for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of kids.flat(3)) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }

  function badge(state) { return el('span', { class: 'state ' + stateClass(state) }, show(state)); }

  // privateMark marks a claim or artifact that only some principals (and the owner) may see:
  // a reader who may see it is told that others may not.
  function privateMark(seenBy) { return el('span', { class: 'private' }, 'private: seen by ' + seenBy.map(show).join(', ')); }
  function seenByLine(v) { return v.seen_by && v.seen_by.length ? ['private: seen by ' + v.seen_by.map(show).join(', ')] : []; }

  // ---- routes: #/VIEW/ARG?tx=N ----

  function route(view, arg, tx) {
    if (tx === undefined) tx = S.tx;
    let r = '#/' + view + (arg ? '/' + encodeURIComponent(arg) : '');
    if (tx !== null) r += '?tx=' + tx;
    return r;
  }

  function link(view, arg, text) { return el('a', { href: route(view, arg) }, text === undefined ? show(arg) : text); }
  // links is a comma-separated list of links to view, one per argument.
  function links(view, args) { return (args || []).map((a, i) => [i ? ', ' : '', link(view, a)]); }

  function parseHash() {
    const h = location.hash.replace(/^#/, '');
    const q = h.indexOf('?');
    const path = q < 0 ? h : h.slice(0, q);
    const params = new URLSearchParams(q < 0 ? '' : h.slice(q + 1));
    let parts;
    try { parts = path.split('/').filter(Boolean).map(decodeURIComponent); } catch (e) { parts = []; }
    const tx = params.get('tx');
    return { view: parts[0] || 'home', arg: parts[1] || '', tx: tx !== null && /^[0-9]+$/.test(tx) ? Number(tx) : null };
  }

  function keyOf(ref) { const i = ref.lastIndexOf('@'); return i < 0 ? ref : ref.slice(0, i); }
  function isClaimRef(ref) { return keyOf(ref).includes('.'); }
  // A run is named like a principal or an artifact: no '.' and no '@'.
  const RUN = new RegExp('^' + NAME + '$', 'u');
  function checkRun(name) {
    if (!RUN.test(name)) throw new Error('not a run name: ' + show(name));
    return name;
  }

  function checkRef(ref) {
    if (!REF.test(ref)) throw new Error('not a reference: ' + show(ref) + ' (a subject, Subject.predicate[@N], or an artifact[@N])');
    return ref;
  }

  // ---- the API ----

  async function api(path, init) {
    const r = await fetch(path, Object.assign({ credentials: 'same-origin', cache: 'no-store' }, init || {}));
    if (r.status === 401) {
      signedOut('Your session ended: sign in again.');
      throw new Error('signed out');
    }
    return r;
  }

  // query runs read statements (one a line) as the signed-in principal, as of S.tx when the
  // page is travelling in time, and returns their results (docs/OUTPUT.md).
  async function query(...stmts) {
    const prefix = S.tx !== null ? 'as of tx ' + S.tx + ' ' : '';
    const script = stmts.map((s) => prefix + s).join('\n');
    const r = await api('/v1/query', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ script }) });
    const body = await r.json();
    if (body.error) throw new Error(body.error.message);
    return body.results;
  }

  async function getJSON(path) {
    const sep = path.includes('?') ? '&' : '?';
    const r = await api(S.tx !== null ? path + sep + 'tx=' + S.tx : path);
    if (!r.ok) {
      let msg = r.statusText;
      try { const b = await r.json(); msg = (b.error && b.error.message) || msg; } catch (e) { /* not JSON */ }
      throw new Error(msg);
    }
    return r.json();
  }

  // ---- sign-in ----

  function $(id) { return document.getElementById(id); }

  function signedOut(msg) {
    if (S.es) { S.es.close(); S.es = null; }
    S.me = null;
    $('bar').hidden = true;
    $('view').hidden = true;
    $('view').replaceChildren();
    $('signin').hidden = false;
    $('signin-error').textContent = msg || '';
    $('token').focus();
  }

  async function signIn(body) {
    const r = await fetch('/v1/session', { method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    if (!r.ok) return null;
    return r.json();
  }

  async function boot() {
    $('signin-form').addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const tok = $('token').value.trim();
      $('token').value = '';
      if (!tok) return;
      const info = await signIn({ token: tok });
      if (!info) { $('signin-error').textContent = 'That token does not sign in: it is unknown, expired or revoked.'; return; }
      start(info);
    });
    $('signout').addEventListener('click', async () => {
      await fetch('/v1/session', { method: 'DELETE', credentials: 'same-origin' });
      signedOut('Signed out.');
    });
    $('search').addEventListener('submit', (ev) => { ev.preventDefault(); search($('q').value.trim()); });
    $('tx').addEventListener('input', () => setTxLabel(Number($('tx').value)));
    $('tx').addEventListener('change', () => {
      const n = Number($('tx').value);
      const rt = parseHash();
      location.hash = route(rt.view, rt.arg, n >= S.head ? null : n);
    });
    $('now').addEventListener('click', () => { const rt = parseHash(); location.hash = route(rt.view, rt.arg, null); });
    window.addEventListener('hashchange', () => { if (S.me) render(); });

    // A one-time sign-in link (mql serve --open) carries its code in the fragment, which no
    // request, log or Referer ever holds; it is spent at once and wiped from the address bar.
    const m = /(?:^#|[#&?])code=([A-Za-z0-9_-]+)/.exec(location.hash);
    if (m) {
      history.replaceState(null, '', location.pathname + '#/');
      const info = await signIn({ code: m[1] });
      if (info) { start(info); return; }
      signedOut('That sign-in link was already used or has expired: ask for a new one, or sign in with a token.');
      return;
    }
    // 204: this browser has not signed in (the server answers that without a 401, which a
    // browser would log as an error on every load).
    const r = await fetch('/v1/session', { credentials: 'same-origin', cache: 'no-store' });
    if (r.status === 200) start(await r.json());
    else signedOut('');
  }

  function start(info) {
    S.me = info;
    S.head = S.startHead = info.head;
    $('signin').hidden = true;
    $('signin-error').textContent = '';
    $('bar').hidden = false;
    $('view').hidden = false;
    $('principal').textContent = show(info.principal) + (info.owner ? ' (owner)' : '');
    loadCatalog();
    loadReviewCount();
    watch();
    render();
  }

  // ---- search ----

  async function loadCatalog() {
    try {
      S.catalog = await getJSON('/v1/catalog');
    } catch (e) { return; }
    const opts = [];
    for (const [kind, list] of [['subject', S.catalog.subjects], ['key', S.catalog.keys], ['artifact', S.catalog.artifacts], ['principal', S.catalog.principals]]) {
      for (const name of list) opts.push(el('option', { value: name, label: kind + ': ' + show(name) }));
    }
    $('names').replaceChildren(...opts);
  }

  // search opens the view of what the box names (a claim, an artifact, a subject, a
  // principal) and otherwise searches: the names that hold the text, and the claims' text.
  function search(v) {
    if (!v) return;
    const c = S.catalog || { subjects: [], keys: [], artifacts: [], principals: [] };
    if (REF.test(v) && (isClaimRef(v) || c.artifacts.includes(keyOf(v)))) location.hash = route('why', v);
    else if (c.subjects.includes(v)) location.hash = route('subject', v);
    else if (c.principals.includes(v)) location.hash = route('principal', v);
    else location.hash = route('search', v);
  }

  // The most names and claims the search view lists.
  const SEARCH_NAMES = 20;
  const SEARCH_CLAIMS = 50;

  // score is a search score as the command line's table prints it.
  function score(x) { return typeof x === 'number' ? x.toFixed(3) : ''; }

  // ---- time travel ----

  // txLabel is the slider's label, kept short so that the header stays on one line; txDetail
  // is the whole of it (when, by whom), for the banner and a screen reader.
  function txLabel(n) { return n >= S.head ? 'now (tx ' + S.head + ')' : 'tx ' + n; }
  function txDetail(n) {
    if (n >= S.head) return 'now (tx ' + S.head + ')';
    const i = S.txInfo.get(n);
    return 'tx ' + n + (i ? ', ' + when(i.at) + ', by ' + show(i.by) : '');
  }
  function setTxLabel(n) {
    $('txlabel').textContent = txLabel(n);
    $('tx').setAttribute('aria-valuetext', txDetail(n));
  }

  function syncTime() {
    const r = $('tx');
    r.max = String(S.head);
    r.value = String(S.tx === null ? S.head : S.tx);
    setTxLabel(S.tx === null ? S.head : S.tx);
    $('now').disabled = S.tx === null;
  }

  // ---- live updates ----

  function watch() {
    if (S.es) S.es.close();
    const es = new EventSource('/v1/watch?after=' + Math.max(0, S.head - 500));
    S.es = es;
    for (const k of EVENT_KINDS) es.addEventListener(k, (ev) => { try { onEvent(JSON.parse(ev.data)); } catch (e) { /* ignore a malformed event */ } });
    es.addEventListener('error', async () => {
      if (es.readyState !== EventSource.CLOSED || S.es !== es) return;
      // The stream was refused: find out whether the session ended.
      try { await api('/v1/session'); setTimeout(() => { if (S.me && S.es === es) watch(); }, 2000); } catch (e) { /* signed out */ }
    });
  }

  let refreshTimer = null;
  function scheduleRefresh() {
    if (refreshTimer) return;
    refreshTimer = setTimeout(() => {
      refreshTimer = null;
      loadCatalog();
      loadReviewCount();
      if (S.tx === null) render();
      else syncTime();
    }, 60);
  }

  function onEvent(e) {
    S.events.push(e);
    if (S.events.length > 2000) S.events.splice(0, S.events.length - 2000);
    S.txInfo.set(e.tx, { at: e.at, by: e.by });
    if (e.tx > S.head) S.head = e.tx;
    if (e.tx <= S.startHead) return;
    notify(e);
    scheduleRefresh();
  }

  function notify(e) {
    let text = 'tx ' + e.tx + ': ' + show(e.ref) + ' ';
    switch (e.kind) {
      case 'claim': text += (e.claim ? show(e.claim.state) + ' = ' + valueText(e.claim) : 'recorded'); break;
      case 'revocation': text += 'revoked by ' + show(e.by); break;
      case 'needs review': text += 'needs review'; break;
      default: text += show(e.kind);
    }
    const a = el('div', { class: 'alert ' + stateClass(e.kind), 'data-tx': e.tx }, text);
    $('alerts').append(a);
    setTimeout(() => a.remove(), 8000);
  }

  async function loadReviewCount() {
    try {
      const q = await getJSON('/v1/review-queue');
      $('review-count').textContent = q.rows.length ? String(q.rows.length) : '';
    } catch (e) { /* shown by the views */ }
  }

  // ---- rendering ----

  let renderSeq = 0;
  let current = null; // the drawn graph, destroyed on the next render

  async function render() {
    const seq = ++renderSeq;
    const rt = parseHash();
    S.tx = rt.tx;
    syncTime();
    const out = el('div', { id: 'content', 'data-view': rt.view, 'data-hash': location.hash });
    const later = [];
    if (S.tx !== null) {
      const i = S.txInfo.get(S.tx);
      out.append(el('p', { class: 'banner' }, 'Reading the memory as of transaction ' + S.tx + (i ? ' (' + when(i.at) + ', by ' + show(i.by) + ')' : '') + '. Live changes are not shown: ',
        el('a', { href: route(rt.view, rt.arg, null) }, 'back to now'), '.'));
    }
    try {
      const fn = VIEWS[rt.view];
      if (!fn) throw new Error('no such view: ' + show(rt.view));
      await fn(out, rt.arg, later);
    } catch (e) {
      if (e.message === 'signed out') return;
      out.append(el('p', { class: 'error', role: 'alert' }, show(e.message)));
    }
    if (seq !== renderSeq) return; // a newer render has started
    if (current) { current.destroy(); current = null; }
    $('view').replaceChildren(out);
    for (const f of later) f();
    out.setAttribute('data-ready', 'true');
  }

  function tabs(ref, on) {
    const key = keyOf(ref);
    const t = [['why', ref, 'Why'], ['impact', ref, 'Impact'], ['history', key, 'History']];
    if (isClaimRef(ref)) t.push(['subject', key.slice(0, key.indexOf('.')), 'Subject']);
    return el('div', { class: 'tabs' }, t.map(([v, a, label]) => el('a', { href: route(v, a), class: v === on ? 'on' : '' }, label)));
  }

  function claimTable(claims) {
    return el('table', { class: 'claims' },
      el('thead', {}, el('tr', {}, ['claim', 'value', 'state', 'kind', 'confidence', 'effective', 'by', 'since', 'sources', ''].map((h) => el('th', {}, h)))),
      el('tbody', {}, claims.map((c) => el('tr', { class: stateClass(c.state), 'data-ref': c.ref },
        el('td', { class: 'ref' }, link('why', c.ref), c.seen_by && c.seen_by.length ? [' ', privateMark(c.seen_by)] : ''),
        el('td', { class: 'value' }, valueText(c)),
        el('td', {}, badge(c.state)),
        el('td', {}, show(c.kind)),
        el('td', {}, conf(c.confidence)),
        el('td', {}, conf(c.effective_confidence)),
        el('td', {}, link('principal', c.asserted_by)),
        el('td', {}, when(c.since)),
        el('td', { class: 'mono' }, (c.sources || []).map((s) => show(s.id)).join(', ')),
        el('td', {}, link('impact', c.ref, 'impact'), ' · ', link('history', keyOf(c.ref), 'history'))))));
  }

  const VIEWS = {
    async home(out, arg, later) {
      out.append(el('h1', {}, 'The memory, as ' + show(S.me.principal) + ' may see it'));
      await VIEWS.stats(out, arg, later);
      await VIEWS.review(out, arg, later);
      await VIEWS.conflicts(out, arg, later);
    },

    async subject(out, name) {
      checkRef(name);
      out.append(el('h1', {}, show(name)), el('p', { class: 'sub' }, 'Live claims, and the claims that contest them.'));
      const [live, conflicts] = await query('live ' + name, 'conflicts ' + name);
      const claims = live.rows.slice();
      for (const cf of conflicts.rows) for (const c of cf.contested) claims.push(c);
      if (!claims.length) { out.append(el('p', {}, 'No live claim about ' + show(name) + ' that you may see.')); return; }
      out.append(claimTable(claims));
    },

    async principal(out, name) {
      checkRef(name);
      out.append(el('h1', {}, show(name)), el('p', { class: 'sub' }, 'Live claims asserted by this principal.'));
      const [live] = await query('live *');
      const mine = live.rows.filter((c) => c.asserted_by === name);
      out.append(mine.length ? claimTable(mine) : el('p', {}, 'None that you may see.'));
    },

    async why(out, ref, later) {
      checkRef(ref);
      out.append(el('h1', {}, 'Why ' + show(ref)), tabs(ref, 'why'));
      const [res] = await query('why ' + ref);
      const g = whyGraph(res.rows[0]);
      await fillStates(g);
      out.append(legend(), graphBox(g, later));
    },

    async impact(out, ref, later) {
      checkRef(ref);
      out.append(el('h1', {}, 'Impact of ' + show(ref)), tabs(ref, 'impact'));
      const [res] = await query('impact ' + ref);
      if (!res.rows.length) {
        out.append(el('p', {}, 'Nothing that you may see depends on ' + show(ref) + '.'));
      }
      const g = impactGraph(res);
      await fillStates(g);
      out.append(legend(), graphBox(g, later));
      out.append(el('h2', {}, 'Dependents'), await explainDependents(res));
      if (res.runs && res.runs.length) out.append(el('h2', {}, 'Served to runs'), servedToRuns(res.runs));
    },

    async history(out, ref) {
      checkRef(ref);
      const key = keyOf(ref);
      out.append(el('h1', {}, 'History of ' + show(key)), tabs(key, 'history'));
      const [res] = await query('history ' + key);
      out.append(timeline(res.rows));
    },

    async review(out) {
      out.append(el('h2', {}, 'Review queue'));
      const q = await getJSON('/v1/review-queue');
      if (!q.rows.length) { out.append(el('p', {}, 'Nothing needs review.')); return; }
      out.append(el('ul', { class: 'review' }, q.rows.map((a) => el('li', { 'data-ref': a.ref },
        link('impact', a.ref), ' ', badge('needs review'), ' — derived by ', show(a.derived_by),
        a.last_review ? '; no longer live since its last review: ' : '; no longer live since it was derived: ',
        links('impact', a.stale),
        ' · ', link('why', a.ref, 'why')))));
    },

    async conflicts(out) {
      out.append(el('h2', {}, 'Contested claims'));
      const [res] = await query('conflicts');
      if (!res.rows.length) { out.append(el('p', {}, 'No contested claim.')); return; }
      for (const cf of res.rows) {
        out.append(el('h3', {}, link('subject', cf.key.slice(0, cf.key.indexOf('.')), show(cf.key))));
        out.append(claimTable((cf.live ? [cf.live] : []).concat(cf.contested)));
      }
    },

    async stats(out) {
      out.append(el('h2', {}, 'Stats'));
      const [res] = await query('stats');
      const s = res.rows[0];
      // The rows and words of the command line's table (a nested row is indented), so that a
      // person reads the same figures under the same names on the page and in a terminal.
      const rows = [['transactions', s.transactions], ['principals', s.principals], ['sources', s.sources], ['claims', s.claims]];
      for (const st of STATES) rows.push([st, (s.by_state || {})[st] || 0, true]);
      rows.push(['keys', s.keys], ['artifacts', s.artifacts], ['needs review', s.needs_review], ['revocations', s.revocations], ['stale rate', conf(s.stale_rate)]);
      const m = s.memory;
      if (m) { // only when the reader may see runs
        rows.push(['runs', m.runs], ['retrievals', m.retrievals, true], ['served', m.served, true],
          ['stale at decision', m.stale_at_decision + ' of ' + m.live_served + ' live when served, in the runs that reached a decision', true],
          ['stale-memory rate', conf(m.stale_memory_rate)], ['context utilization', conf(m.context_utilization)], ['retrieval diversity', conf(m.retrieval_diversity)],
          ['outcomes', m.outcomes + ': ' + m.succeeded + ' succeeded, ' + m.failed + ' failed, ' + m.declined + ' declined'], ['decline rate', conf(m.decline_rate)],
          ['failures', m.memory_failures + ' memory, ' + m.downstream_failures + ' downstream']);
      }
      out.append(el('table', { class: 'stats' }, el('tbody', {}, rows.map(([k, v, nested]) =>
        el('tr', { 'data-metric': k }, el('th', { class: nested ? 'nested' : undefined }, k), el('td', {}, show(v)))))));
    },

    // search: the names the catalog holds that contain the text, and the live claims whose
    // text best matches it, found by the language's search as the signed-in principal (so
    // counted, scored and shown among what it may see only), best first.
    async search(out, text) {
      out.append(el('h1', {}, 'Search: ' + show(text)),
        el('p', { class: 'sub' }, 'Names that hold the text, and the live claims whose text (subject, predicate, value, excerpts) best matches it, best first.'));
      const c = S.catalog || { subjects: [], keys: [], artifacts: [], principals: [] };
      const low = text.toLowerCase();
      const names = [];
      for (const [view, kind, list] of [['subject', 'subject', c.subjects], ['why', 'key', c.keys], ['why', 'artifact', c.artifacts], ['principal', 'principal', c.principals]]) {
        for (const n of list) if (n.toLowerCase().includes(low)) names.push([view, kind, n]);
      }
      if (names.length) {
        out.append(el('h2', {}, 'Names'), el('ul', { class: 'names' }, names.slice(0, SEARCH_NAMES).map(([view, kind, n]) =>
          el('li', { 'data-name': n }, el('span', { class: 'kind' }, kind), ' ', link(view, n)))));
        if (names.length > SEARCH_NAMES) out.append(el('p', { class: 'sub' }, 'and ' + (names.length - SEARCH_NAMES) + ' more: type more of the name.'));
      }
      out.append(el('h2', {}, 'Claims'));
      // JSON's string escapes are Go's, so a JSON string is a string of the language.
      const [res] = await query('search ' + JSON.stringify(text) + ' limit ' + SEARCH_CLAIMS);
      if (!res.rows.length) { out.append(el('p', {}, 'No live claim that you may see matches.')); return; }
      out.append(el('table', { class: 'claims hits' },
        el('thead', {}, el('tr', {}, ['score', 'subject', 'claim', 'value', 'state', 'by', 'matched'].map((h) => el('th', {}, h)))),
        el('tbody', {}, res.rows.map((h) => el('tr', { class: stateClass(h.state), 'data-ref': h.ref },
          el('td', { class: 'score mono' }, score(h.score)),
          el('td', {}, link('subject', h.subject)),
          el('td', { class: 'ref' }, link('why', h.ref), h.seen_by && h.seen_by.length ? [' ', privateMark(h.seen_by)] : ''),
          el('td', { class: 'value' }, valueText(h)),
          el('td', {}, badge(h.state)),
          el('td', {}, link('principal', h.asserted_by)),
          el('td', { class: 'mono' }, (h.matched_terms || []).map(show).join(' ')))))));
      if (res.rows.length === SEARCH_CLAIMS) out.append(el('p', { class: 'sub' }, 'The ' + SEARCH_CLAIMS + ' best matches: add words to narrow the search.'));
    },

    async runs(out) {
      out.append(el('h1', {}, 'Runs'), el('p', { class: 'sub' }, 'Agent runs you may see: what their reads served, what they decided, how they ended.'));
      const [res] = await query('runs');
      if (!res.rows.length) { out.append(el('p', {}, 'No run that you may see.')); return; }
      out.append(el('table', { class: 'runs' },
        el('thead', {}, el('tr', {}, ['run', 'by', 'first', 'retrievals', 'served', 'cited', 'stale at decision', 'decisions', 'outcome'].map((h) => el('th', {}, h)))),
        el('tbody', {}, res.rows.map((r) => el('tr', { 'data-run': r.run, 'data-by': r.by },
          el('td', {}, link('run', r.run)), el('td', {}, link('principal', r.by)), el('td', {}, when(r.first)),
          el('td', {}, show(r.retrievals)), el('td', {}, show(r.served)), el('td', {}, show(r.cited)), el('td', {}, show(r.stale_at_decision)),
          el('td', {}, show(r.decisions)), el('td', {}, r.outcome ? show(r.outcome) : 'none yet'))))));
    },

    async run(out, name) {
      checkRun(name);
      out.append(el('h1', {}, 'Run ' + show(name)));
      const [res] = await query('run ' + name);
      for (const r of res.rows) out.append(runReport(r));
    },

    async changes(out) {
      out.append(el('h1', {}, 'Changes'), el('p', { class: 'sub' }, 'The change feed, newest first, as it arrives.'));
      const rows = S.events.slice().reverse().slice(0, 500);
      out.append(el('table', {}, el('thead', {}, el('tr', {}, ['tx', 'at', 'by', 'what', 'ref'].map((h) => el('th', {}, h)))),
        el('tbody', {}, rows.map((e) => el('tr', {},
          el('td', {}, el('a', { href: route('home', '', e.tx) }, String(e.tx))),
          el('td', {}, when(e.at)), el('td', {}, show(e.by)), el('td', {}, show(e.kind)),
          el('td', { class: 'ref' }, REF.test(e.ref) && (e.claim || e.artifact) ? link('why', e.ref) : show(e.ref)))))));
    },
  };

  function timeline(rows) {
    if (!rows.length) return el('p', {}, 'No version that you may see.');
    return el('ol', { class: 'timeline' }, rows.map((v) => {
      const artifact = v.derived_by !== undefined;
      const state = artifact ? (v.review === 'needs review' ? 'revoked' : v.state) : v.state;
      return el('li', { class: stateClass(state), 'data-ref': v.ref },
        el('div', {}, link('why', v.ref), artifact ? '' : [' = ', el('span', { class: 'value' }, valueText(v))], ' ',
          badge(v.state), artifact && v.review ? [' ', badge(v.review)] : '', v.seen_by && v.seen_by.length ? [' ', privateMark(v.seen_by)] : ''),
        el('div', { class: 'sub' }, 'tx ' + v.tx + ' · ' + when(v.recorded_at) + ' · ' + (artifact ? 'derived by ' + show(v.derived_by) + (v.run ? ' in run ' + show(v.run) : '') : show(v.kind) + ' by ' + show(v.asserted_by)) +
          (artifact ? '' : ' · since ' + when(v.since)) +
          (v.sources && v.sources.length ? ' · from ' + v.sources.map((s) => show(s.id)).join(', ') : '') +
          (artifact ? ' · from ' + (v.derived_from || []).map(show).join(', ') : '')),
        el('div', {}, link('impact', v.ref, 'impact')));
    }));
  }

  // ---- graphs ----

  // A graph is nodes (each once, by the thing it stands for) and edges (each once); node ids
  // are n0, n1, … so that no agent-written string is ever a selector.
  function newGraph() {
    const g = { nodes: [], edges: [], byKey: new Map(), seen: new Set() };
    // A node first known by reference alone (stub) takes the full node's fields when that
    // comes later.
    g.node = (key, make, stub) => {
      if (g.byKey.has(key)) {
        const n = g.byKey.get(key);
        if (n.stub && !stub) { Object.assign(n, make()); n.stub = false; }
        return n.id;
      }
      const n = Object.assign({ id: 'n' + g.nodes.length, key, stub: !!stub }, make());
      g.nodes.push(n);
      g.byKey.set(key, n);
      return n.id;
    };
    g.edge = (from, to, label, cls) => {
      const k = from + '\u0000' + to + '\u0000' + label;
      if (g.seen.has(k)) return;
      g.seen.add(k);
      g.edges.push({ from, to, label: show(label), cls: cls || '' });
    };
    return g;
  }

  function wrap(s, width) {
    const words = s.split(' ');
    const lines = [];
    let cur = '';
    for (const w of words) {
      if (cur && cur.length + 1 + w.length > width) { lines.push(cur); cur = w; } else cur = cur ? cur + ' ' + w : w;
    }
    if (cur) lines.push(cur);
    return lines;
  }

  function claimNode(g, c) {
    return g.node('claim:' + c.ref, () => ({
      kind: 'claim', state: c.state, private: !!(c.seen_by && c.seen_by.length),
      lines: [show(c.ref) + ' = ' + valueText(c), c.state + ' · ' + show(c.asserted_by) + ' · ' + conf(c.effective_confidence)].concat(seenByLine(c)),
      fields: [['claim', show(c.ref)], ['value', valueText(c)], ['state', show(c.state)], ['since', when(c.since)], ['kind', show(c.kind)],
        ['confidence', conf(c.confidence)], ['effective confidence', conf(c.effective_confidence)], ['asserted by', show(c.asserted_by)],
        ['recorded', 'tx ' + c.tx + ' · ' + when(c.recorded_at)], ['sources', (c.sources || []).map((s) => show(s.id)).join(', ')],
        ['grant', show(c.grant)], ['seen by', (c.seen_by || []).map(show).join(', ')], ['valid from', when(c.valid_from)], ['valid until', when(c.valid_until)]],
      links: [['why', c.ref], ['impact', c.ref], ['history', keyOf(c.ref)], ['subject', c.subject]],
    }));
  }

  function artifactNode(g, a) {
    return g.node('artifact:' + a.ref, () => ({
      kind: 'artifact', state: a.state, review: a.review, private: !!(a.seen_by && a.seen_by.length),
      lines: [show(a.ref), a.state + (a.review === 'needs review' ? ' · NEEDS REVIEW' : '') + ' · ' + show(a.derived_by)].concat(seenByLine(a)),
      fields: [['artifact', show(a.ref)], ['state', show(a.state)], ['review', show(a.review)], ['stale inputs', (a.stale || []).map(show).join(', ')],
        ['seen by', (a.seen_by || []).map(show).join(', ')], ['derived by', show(a.derived_by)], ['in run', a.run ? link('run', a.run) : ''], ['derived from', (a.derived_from || []).map(show).join(', ')], ['confidence', conf(a.confidence)],
        ['effective confidence', conf(a.effective_confidence)], ['recorded', 'tx ' + a.tx + ' · ' + when(a.recorded_at)],
        ['last review', a.last_review ? show(a.last_review.by) + ' · tx ' + a.last_review.tx + (a.last_review.because ? ' · "' + show(a.last_review.because) + '"' : '') : '']],
      links: [['why', a.ref], ['impact', a.ref], ['history', a.name]],
    }));
  }

  function refNode(g, ref, state) {
    const claim = isClaimRef(ref);
    return g.node((claim ? 'claim:' : 'artifact:') + ref, () => ({
      kind: claim ? 'claim' : 'artifact', state: state || '', ref,
      lines: [show(ref)].concat(state ? [state] : []),
      fields: [[claim ? 'claim' : 'artifact', show(ref)], ['state', show(state)]],
      links: [['why', ref], ['impact', ref], ['history', keyOf(ref)]],
    }), true);
  }

  // fillStates gives the nodes known by reference alone (what replaced a revoked or superseded
  // version) their state and review, read with one history per key as the reader sees it, so
  // that no node of a graph is drawn without its state.
  async function fillStates(g) {
    const stubs = g.nodes.filter((n) => n.stub && !n.state && REF.test(n.ref));
    const keys = [...new Set(stubs.map((n) => keyOf(n.ref)))];
    if (!keys.length) return;
    const versions = new Map();
    try {
      for (const r of await query(...keys.map((k) => 'history ' + k))) for (const v of r.rows) versions.set(v.ref, v);
    } catch (e) { return; /* drawn without it: the node's own views say more */ }
    for (const n of stubs) {
      const v = versions.get(n.ref);
      if (!v) continue;
      n.state = v.state;
      n.review = v.review;
      const review = v.review === 'needs review' ? ' · NEEDS REVIEW' : '';
      n.lines = [show(n.ref) + (v.derived_by === undefined ? ' = ' + valueText(v) : ''), show(v.state) + review + ' · ' + show(v.asserted_by || v.derived_by)];
      n.fields = n.fields.filter(([k]) => k !== 'state').concat([['state', show(v.state)], ['review', show(v.review)],
        [v.derived_by ? 'derived by' : 'asserted by', show(v.asserted_by || v.derived_by)]]);
    }
  }

  function principalNode(g, name) {
    return g.node('principal:' + name, () => ({
      kind: 'principal', lines: [show(name)], fields: [['principal', show(name)]], links: [['principal', name]],
    }));
  }

  function whyGraph(root) {
    const g = newGraph();
    const add = (n) => {
      let id;
      if (n.claim) {
        id = claimNode(g, n.claim);
        g.edge(id, principalNode(g, n.claim.asserted_by), n.claim.kind + ' by', 'by');
      } else if (n.artifact) {
        id = artifactNode(g, n.artifact);
        g.edge(id, principalNode(g, n.artifact.derived_by), 'derived by', 'by');
      } else if (n.source) {
        const s = n.source;
        id = g.node('source:' + s.id, () => ({
          kind: 'source',
          lines: [show(s.id)].concat(s.excerpt ? wrap('"' + show(s.excerpt) + '"', 34) : [], s.revision ? ['revision ' + show(s.revision)] : []),
          fields: [['source', show(s.id)], ['excerpt', s.excerpt ? '"' + show(s.excerpt) + '"' : ''], ['uri', show(s.uri)], ['revision', show(s.revision)]],
          links: [],
        }));
      } else if (n.grant) {
        const gr = n.grant;
        id = g.node('grant:' + gr.id, () => ({
          kind: 'grant',
          lines: ['grant ' + show(gr.id), show(gr.grantee) + ' may ' + show(gr.right), 'on ' + show(gr.scope)],
          fields: [['grant', show(gr.id)], ['grantee', show(gr.grantee)], ['right', show(gr.right)], ['scope', show(gr.scope)], ['granted by', show(gr.by)], ['at', 'tx ' + gr.tx + ' · ' + when(gr.at)]],
          links: [['principal', gr.grantee]],
        }));
      } else if (n.revocation) {
        const rv = n.revocation;
        id = g.node('revocation:' + rv.claim, () => ({
          kind: 'revocation',
          lines: ['revoked by ' + show(rv.by), when(rv.at)].concat(rv.because ? wrap('"' + show(rv.because) + '"', 34) : []),
          fields: [['revoked', show(rv.claim)], ['by', show(rv.by)], ['at', 'tx ' + rv.tx + ' · ' + when(rv.at)], ['because', rv.because ? '"' + show(rv.because) + '"' : ''],
            ['standing', show(rv.standing)], ['replaced by', show(rv.replaced_by)]],
          links: [['principal', rv.by]].concat(rv.replaced_by ? [['why', rv.replaced_by]] : []),
        }));
        g.edge(id, principalNode(g, rv.by), 'revoked by', 'by');
        if (rv.replaced_by) g.edge(id, refNode(g, rv.replaced_by, ''), 'replaced by', 'strong');
      } else {
        const who = n.review ? n.review.by : n.by;
        id = g.node('event:' + g.nodes.length, () => ({
          kind: 'event',
          lines: [show(n.kind) + (who ? ' by ' + show(who) : ''), n.review ? when(n.review.at) : (n.standing ? 'standing ' + show(n.standing) : when(n.at))],
          fields: [['what', show(n.kind)], ['by', show(who)], ['at', when(n.review ? n.review.at : n.at)], ['standing', show(n.standing)],
            ['because', n.review && n.review.because ? '"' + show(n.review.because) + '"' : '']],
          links: who ? [['principal', who]] : [],
        }));
        if (who) g.edge(id, principalNode(g, who), (n.kind === 'review' ? 'reviewed' : 'confirmed') + ' by', 'by');
      }
      for (const c of n.children || []) {
        const cid = add(c);
        g.edge(id, cid, c.relation || '', c.relation === 'supersedes' || c.relation === 'contests' ? 'strong' : '');
      }
      return id;
    };
    if (root) add(root);
    return g;
  }

  function impactGraph(res) {
    const g = newGraph();
    const changes = new Map((res.changes || []).map((c) => [c.ref, c]));
    for (const of of res.of || []) {
      const ch = changes.get(of) || {};
      const id = refNode(g, of, ch.state || '');
      if (ch.replaced_by) g.edge(id, refNode(g, ch.replaced_by, ''), 'replaced by', 'by');
    }
    const arts = new Map(res.rows.map((d) => [d.artifact.ref, d.artifact]));
    const nodeOf = (ref) => arts.has(ref) ? artifactNode(g, arts.get(ref)) : refNode(g, ref, (changes.get(ref) || {}).state || '');
    for (const d of res.rows) {
      for (let i = 1; i < d.path.length; i++) g.edge(nodeOf(d.path[i - 1]), nodeOf(d.path[i]), 'input of', '');
      nodeOf(d.artifact.ref);
    }
    return g;
  }

  // runReport is `run NAME` for one principal's run: how it ended (and, when it failed, whether
  // the memory is to blame), what it decided, and each claim version it was served, with its
  // state when served, at the decision and now.
  function runReport(r) {
    const ended = r.outcome
      ? ['Ended ', el('strong', {}, show(r.outcome)), ' at tx ' + r.outcome_tx, r.because ? ' because "' + show(r.because) + '"' : '', '.',
        r.outcome === 'failed' ? (r.memory_failure
          ? ' A memory failure: a claim it was served was stale at the decision, or revoked later.'
          : ' A downstream failure: every claim it was served was live at the decision and never revoked.') : '']
      : 'No outcome recorded yet.';
    const decided = r.decisions && r.decisions.length
      ? ['Decided ', links('impact', r.decisions), ' at tx ' + r.decision_tx, ', citing the served claims marked below.']
      : 'No decision recorded.';
    return el('section', { class: 'run', 'data-run': r.run, 'data-by': r.by },
      el('h2', {}, show(r.run) + ' (' + show(r.by) + ')'),
      el('p', { class: 'outcome' }, ended), el('p', {}, decided),
      el('table', { class: 'served' },
        el('thead', {}, el('tr', {}, ['served', 'read at', 'when served', 'at decision', 'now', 'stale', 'cited'].map((h) => el('th', {}, h)))),
        el('tbody', {}, (r.served || []).map((v) => el('tr', { class: v.stale ? 'stale' : '', 'data-ref': v.ref },
          el('td', { class: 'ref' }, link('why', v.ref)), el('td', {}, 'tx ' + v.read_at_tx),
          el('td', {}, badge(v.when_served)), el('td', {}, v.at_decision ? badge(v.at_decision) : ''), el('td', {}, badge(v.now)),
          el('td', {}, v.stale ? show(v.stale) : ''), el('td', {}, v.cited ? 'cited' : ''))))),
      el('h3', {}, 'Reads for this run'),
      el('ul', { class: 'retrievals' }, (r.retrievals || []).map((q) => el('li', {},
        el('code', {}, show(q.statement)), ' at tx ' + q.read_at_tx + ', ' + when(q.at) + ': served ' + (q.served || []).length))));
  }

  // servedToRuns lists the runs that were served a changed version (the runs of `impact`, which
  // only a reader who may see them gets): what each was served, what it decided, how it ended.
  function servedToRuns(runs) {
    return el('ul', { class: 'runs' }, runs.map((r) => el('li', { 'data-run': r.run },
      el('strong', {}, link('run', r.run)), ' (' + show(r.by) + '): served ', links('why', r.served),
      ' at tx ' + r.served_tx,
      '; ', r.decisions && r.decisions.length ? ['decided ', links('impact', r.decisions)] : 'no decision recorded',
      '; ', r.outcome ? show(r.outcome) : 'no outcome yet')));
  }

  // explainDependents says, for each dependent, why it needs review or why it does not: the
  // path from the change, and what happened to each stale input (superseded by what, revoked
  // by whom and why), read with one revoked-by per stale claim version.
  async function explainDependents(res) {
    const changes = new Map((res.changes || []).map((c) => [c.ref, c]));
    const stale = new Set();
    for (const d of res.rows) for (const s of d.artifact.stale || []) if (isClaimRef(s) && s.includes('@') && REF.test(s)) stale.add(s);
    const fate = new Map();
    if (stale.size) {
      try {
        const rs = await query(...[...stale].map((s) => 'revoked-by ' + s));
        for (const r of rs) fate.set(r.rows[0].claim.ref, r.rows[0]);
      } catch (e) { /* explained from the changes alone */ }
    }
    const what = (ref) => {
      const f = fate.get(ref);
      if (f && f.revoked) {
        const rv = f.revocation;
        return show(ref) + ' was revoked by ' + show(rv.by) + ' at ' + when(rv.at) + ' (tx ' + rv.tx + ')' +
          (rv.because ? ', because "' + show(rv.because) + '"' : '') + ', with standing ' + show(rv.standing) +
          (rv.replaced_by ? ', and replaced by ' + show(rv.replaced_by) : '');
      }
      if (f) {
        const c = f.claim;
        if (c.state === 'superseded') return show(ref) + ' = ' + valueText(c) + ' was superseded' + (c.superseded_by ? ' by ' + show(c.superseded_by) : '') + ' at ' + when(c.since);
        return show(ref) + ' = ' + valueText(c) + ' is ' + show(c.state) + ' since ' + when(c.since);
      }
      const ch = changes.get(ref);
      if (ch) return show(ref) + ' is ' + show(ch.state) + (ch.replaced_by ? ', replaced by ' + show(ch.replaced_by) : '');
      return show(ref) + ' is no longer live';
    };
    // What happened to a stale input is said once, for the first dependent that rests on it;
    // the others name the input and its state and point back there.
    const told = new Map();
    const once = (ref) => {
      if (!told.has(ref)) return what(ref) + '.';
      const f = fate.get(ref);
      const st = f ? (f.revoked ? 'revoked' : f.claim.state) : ((changes.get(ref) || {}).state || 'no longer live');
      return show(ref) + ' is ' + show(st) + ' (see ' + show(told.get(ref)) + ' above).';
    };
    return el('div', { class: 'dependents' }, res.rows.map((d) => {
      const a = d.artifact;
      const needs = a.review === 'needs review';
      const path = d.path.map(show).join(' → ');
      let text;
      if (needs) {
        const stale = (a.stale || []).map((s) => { const t = once(s); if (!told.has(s)) told.set(s, a.ref); return t; });
        text = show(a.ref) + ' needs review. It rests on the changed node along ' + path + '. ' + stale.join(' ') +
          (a.last_review ? ' It was last reviewed by ' + show(a.last_review.by) + ' at tx ' + a.last_review.tx + ', before that.' : ' It has never been reviewed since.');
      } else if (a.review === 'superseded') {
        text = show(a.ref) + ' is an old version (superseded): its review no longer matters. Path: ' + path + '.';
      } else {
        text = show(a.ref) + ' is up to date: ' + (a.last_review ? 'reviewed by ' + show(a.last_review.by) + ' at tx ' + a.last_review.tx + ' after its inputs changed.' : 'every input it rests on is still live.') + ' Path: ' + path + '.';
      }
      return el('p', { class: 'explain' + (needs ? '' : ' ok'), 'data-ref': a.ref, 'data-review': a.review }, link('why', a.ref), ' ', badge(a.review), ' ', text);
    }));
  }

  // The legend has a swatch for every colour a node can have: the claim states, an artifact
  // (blue while up to date), one that needs review, a private node (dashed), the selection.
  function legend() {
    return el('div', { class: 'legend', 'aria-hidden': 'true' }, STATES.map(badge), badge('artifact'), badge('needs review'),
      el('span', { class: 'state private-swatch' }, 'private (seen by some)'), el('span', { class: 'state selected-swatch' }, 'selected'));
  }

  const PAD = 18;              // the canvas's margin around the graph, in CSS px
  const MAX_CANVAS = 6000;     // the tallest the canvas grows, in CSS px
  const RANK_GAP = 44;         // between a node and what it points at
  const NODE_GAP = 28;         // between two nodes side by side
  const STRIP_GAP = 32;        // between the strips of a folded graph
  const READABLE = 1;          // the zoom at which a label is FONT_SIZE px high
  const FONT_SIZE = 11;
  const FONT = 'Helvetica, Arial, sans-serif';
  const LINE_WIDTH = 240;      // the longest line of a label, in CSS px, before it wraps

  const FAN = 6;               // a node with this many leaves of one relation draws them as a group
  const CELL_GAP = 10;         // between the nodes of a group
  const GROUP_PAD = 10;        // inside a group's box
  const GROUP_LABEL = 22;      // a group's label, above its nodes

  const STYLE = [
    { selector: 'node', style: {
      'shape': 'round-rectangle', 'label': 'data(label)', 'text-wrap': 'wrap',
      'text-valign': 'center', 'text-halign': 'center', 'font-size': FONT_SIZE, 'font-family': FONT,
      'color': '#212529', 'border-width': 1.5,
      'background-color': PALETTE.principal[0], 'border-color': PALETTE.principal[1] } },
    // A group's box takes its size from its nodes; every other node has its measured size.
    { selector: 'node[w]', style: { 'width': 'data(w)', 'height': 'data(h)', 'text-max-width': 'data(w)' } },
    { selector: 'node.principal', style: { 'shape': 'ellipse' } },
    { selector: 'node.source', style: { 'shape': 'rectangle', 'background-color': PALETTE.source[0], 'border-color': PALETTE.source[1] } },
    { selector: 'node.grant', style: { 'shape': 'round-hexagon', 'background-color': PALETTE.grant[0], 'border-color': PALETTE.grant[1] } },
    { selector: 'node.revocation', style: { 'shape': 'round-octagon', 'background-color': PALETTE.revocation[0], 'border-color': PALETTE.revocation[1], 'color': '#ffffff' } },
    { selector: 'node.event', style: { 'background-color': PALETTE.event[0], 'border-color': PALETTE.event[1] } },
    { selector: 'node.artifact', style: { 'shape': 'barrel', 'background-color': PALETTE.artifact[0], 'border-color': PALETTE.artifact[1] } },
  ].concat(STATES.map((st) => ({ selector: 'node.claim.' + st + ', node.artifact.' + st, style: { 'background-color': PALETTE[st][0], 'border-color': PALETTE[st][1] } })), [
    { selector: 'node.artifact.live', style: { 'background-color': PALETTE.artifact[0], 'border-color': PALETTE.artifact[1] } },
    { selector: 'node.claim.live', style: { 'border-width': 2.5 } },
    { selector: 'node.needs-review', style: { 'background-color': PALETTE['needs review'][0], 'border-color': PALETTE['needs review'][1], 'border-width': 5, 'border-style': 'double' } },
    { selector: 'node.private', style: { 'border-style': 'dashed' } },
    { selector: 'node.group', style: { 'shape': 'round-rectangle', 'background-color': '#f8f9fa', 'border-color': '#adb5bd', 'border-width': 1,
      'padding': GROUP_PAD, 'text-valign': 'top', 'text-halign': 'center', 'text-margin-y': -4, 'font-size': 12, 'font-weight': 'bold', 'color': '#495057',
      'z-compound-depth': 'top', 'z-index': 1 } },
    // A group and its nodes are drawn above the edges that pass behind it to the strips below.
    { selector: 'node.grouped', style: { 'z-compound-depth': 'top', 'z-index': 2 } },
    // Selection is a ring outside the node, in a colour no state has, and leaves the node's own
    // colours alone: a tint over them would make one state look like another.
    { selector: 'node:selected', style: { 'overlay-opacity': 0, 'outline-color': SELECTED, 'outline-width': 3, 'outline-offset': 3, 'outline-opacity': 1 } },
    { selector: 'node:active', style: { 'overlay-opacity': 0 } },
    { selector: 'edge', style: {
      'curve-style': 'bezier', 'target-arrow-shape': 'triangle', 'width': 1.4, 'line-color': '#868e96', 'target-arrow-color': '#868e96',
      'label': 'data(label)', 'font-size': 10, 'color': '#495057', 'text-background-color': '#ffffff', 'text-background-opacity': 1,
      'text-background-padding': 2, 'text-rotation': 'none' } },
    { selector: 'edge.by', style: { 'line-style': 'dashed' } },
    { selector: 'edge.strong', style: { 'width': 2.8, 'line-color': '#343a40', 'target-arrow-color': '#343a40' } },
  ]);

  function nodeClasses(n) {
    return [n.kind, stateClass(n.state), n.review === 'needs review' ? 'needs-review' : '', n.private ? 'private' : ''].filter(Boolean);
  }

  // layout places the graph's nodes for Cytoscape, for a canvas `width` CSS px wide at zoom 1.
  //
  // A wide or deep graph must stay readable at the zoom the page opens at, so it is not shrunk
  // to fit: (1) a fan — at least FAN edges of one relation from one node to nodes that lead
  // nowhere of their own (an impact's hundred dependents) — becomes one group, its nodes in a
  // grid inside a box that says what they are, with one edge to the box; (2) dagre lays out
  // the graph with each group as one node; (3) what is still wider than the canvas is folded
  // into strips (fold). The canvas then grows to the graph's height (fitCanvas).
  function layout(g, width) {
    // A node is as wide as its longest line, measured in the label's font; a line is wrapped
    // at spaces to at most LINE_WIDTH px (a line of 36 CJK characters is twice as wide as one
    // of 36 Latin ones).
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.font = FONT_SIZE + 'px ' + FONT;
    const fit = (l) => {
      const out = [];
      let cur = '';
      for (const w of l.split(' ')) {
        if (cur && ctx.measureText(cur + ' ' + w).width > LINE_WIDTH) { out.push(cur); cur = w; } else cur = cur ? cur + ' ' + w : w;
      }
      return out.concat([cur]);
    };
    const size = new Map(g.nodes.map((n) => {
      const lines = n.lines.flatMap(fit);
      const longest = Math.max(...lines.map((l) => ctx.measureText(l).width));
      return [n.id, { label: lines.join('\n'), w: Math.ceil(Math.max(60, longest + 24)), h: lines.length * 14 + 14 }];
    }));
    const outs = new Map(), ins = new Map();
    for (const e of g.edges) {
      outs.set(e.from, (outs.get(e.from) || []).concat([e]));
      ins.set(e.to, (ins.get(e.to) || []).concat([e]));
    }
    const shared = (id) => (ins.get(id) || []).length > 1;
    // A node leads nowhere of its own when every edge out of it reaches a node others reach too
    // (an asserter), or there is none.
    const leaf = (id) => (outs.get(id) || []).every((e) => shared(e.to));
    const groupOf = new Map(); // node id → group
    const groups = [];
    for (const n of g.nodes) {
      const fans = new Map();
      for (const e of outs.get(n.id) || []) {
        if (groupOf.has(e.to) || !leaf(e.to) || e.to === n.id) continue;
        fans.set(e.label, (fans.get(e.label) || []).concat([e]));
      }
      for (const [label, fan] of fans) {
        if (fan.length < FAN) continue;
        const members = [...new Set(fan.map((e) => e.to))].filter((m) => !groupOf.has(m)); // a node is in one group at most
        if (members.length < FAN) continue;
        const cw = Math.max(...members.map((m) => size.get(m).w)) + 8, ch = Math.max(...members.map((m) => size.get(m).h)) + 8;
        const cols = Math.max(1, Math.min(members.length, Math.floor((width - 2 * GROUP_PAD + CELL_GAP) / (cw + CELL_GAP))));
        const rows = Math.ceil(members.length / cols);
        const gr = { id: 'g' + groups.length, from: n.id, label, members, cw, ch, cols,
          w: cols * cw + (cols - 1) * CELL_GAP + 2 * GROUP_PAD, h: rows * ch + (rows - 1) * CELL_GAP + 2 * GROUP_PAD + GROUP_LABEL };
        const verb = / (of|by|from)$/.test(label) ? 'is ' + label : label;
        gr.text = n.lines[0] + ' ' + verb + ' these ' + members.length + ':';
        groups.push(gr);
        for (const m of members) groupOf.set(m, gr);
      }
    }
    const fanEdge = (e) => groupOf.has(e.to) && groupOf.get(e.to).from === e.from && groupOf.get(e.to).label === e.label;
    // (2) dagre, on a headless copy in which each group is one node.
    const proxy = (id) => groupOf.has(id) ? groupOf.get(id).id : id;
    const pnodes = g.nodes.filter((n) => !groupOf.has(n.id)).map((n) => ({ data: { id: n.id, w: size.get(n.id).w + 8, h: size.get(n.id).h + 8 } }))
      .concat(groups.map((gr) => ({ data: { id: gr.id, w: gr.w, h: gr.h } })));
    const pedges = new Map(), beside = new Set();
    for (const e of g.edges) {
      const a = proxy(e.from), b = proxy(e.to);
      // What replaced a version, when nothing else leads to it, is laid out as if it stood
      // alone: dagre then puts it in the top rank, beside the start, not under the fold.
      if (e.label === 'replaced by' && !shared(e.to) && !(outs.get(e.to) || []).length) { beside.add(e.to); continue; }
      if (a !== b) pedges.set(a + ' ' + b, { data: { id: 'p' + pedges.size, source: a, target: b } });
    }
    const pcy = cytoscape({ headless: true, styleEnabled: true, elements: pnodes.concat([...pedges.values()]),
      style: [{ selector: 'node', style: { 'width': 'data(w)', 'height': 'data(h)', 'shape': 'rectangle' } }] });
    pcy.layout({ name: 'dagre', rankDir: 'TB', nodeSep: NODE_GAP, rankSep: RANK_GAP, edgeSep: 12, fit: false, animate: false }).run();
    for (const id of beside) { const n = pcy.getElementById(id); n.position({ x: n.position('x') + 60, y: n.position('y') }); } // room for the edge's label
    fold(pcy, width);
    const pos = new Map(pcy.nodes().map((n) => [n.id(), Object.assign({}, n.position())]));
    pcy.destroy();
    // (3) Cytoscape's elements: a group's box is a compound node around its members.
    const els = groups.map((gr) => ({ group: 'nodes', data: { id: gr.id, label: gr.text }, classes: ['group'], selectable: false }));
    for (const n of g.nodes) {
      const gr = groupOf.get(n.id);
      let p = pos.get(n.id);
      if (gr) {
        const i = gr.members.indexOf(n.id), c = pos.get(gr.id);
        p = { x: c.x - gr.w / 2 + GROUP_PAD + (i % gr.cols) * (gr.cw + CELL_GAP) + gr.cw / 2,
          y: c.y - gr.h / 2 + GROUP_LABEL + GROUP_PAD + Math.floor(i / gr.cols) * (gr.ch + CELL_GAP) + gr.ch / 2 };
      }
      const sz = size.get(n.id);
      const data = { id: n.id, label: sz.label, w: sz.w, h: sz.h };
      if (gr) data.parent = gr.id;
      els.push({ group: 'nodes', data, position: p, classes: nodeClasses(n).concat(gr ? ['grouped'] : []) });
    }
    g.edges.forEach((e, i) => {
      if (fanEdge(e)) return;
      els.push({ group: 'edges', data: { id: 'e' + i, source: e.from, target: e.to, label: e.label }, classes: e.cls ? [e.cls] : [] });
    });
    for (const gr of groups) els.push({ group: 'edges', data: { id: 'f' + gr.id, source: gr.from, target: gr.id, label: gr.label } });
    return els;
  }

  // fold makes a wide layered drawing fit the canvas's width at a readable zoom. From the first
  // rank wider than the canvas down, each node of that rank and what only it leads to (a claim
  // and its source, a plan and the group of its dependents) is one unit; the units are packed
  // left to right in dagre's order into strips no wider than the canvas, and the strips are
  // stacked one under the other, like lines of text. Nodes that many point at and that point
  // nowhere (the asserters) go under all the strips, where every edge to them runs downwards.
  // The ranks above the fold are centred over the strips.
  function fold(cy, width) {
    const items = new Map(cy.nodes().map((n) => {
      const p = n.position(), w = n.outerWidth(), h = n.outerHeight();
      return [n.id(), { n, x: p.x, y: p.y, x1: p.x - w / 2, x2: p.x + w / 2, y1: p.y - h / 2, y2: p.y + h / 2 }];
    }));
    const ranks = new Map();
    for (const it of items.values()) { const k = Math.round(it.y); ranks.set(k, (ranks.get(k) || []).concat([it])); }
    const ys = [...ranks.keys()].sort((a, b) => a - b);
    const box = (list) => ({ x1: Math.min(...list.map((i) => i.x1)), x2: Math.max(...list.map((i) => i.x2)),
      y1: Math.min(...list.map((i) => i.y1)), y2: Math.max(...list.map((i) => i.y2)) });
    const f = ys.findIndex((y) => { const b = box(ranks.get(y)); return b.x2 - b.x1 > width; });
    if (f < 0) return;
    let top = 0;
    for (const y of ys.slice(0, f)) { // each rank above the fold, centred on x = 0
      const list = ranks.get(y), b = box(list);
      for (const i of list) i.n.position({ x: i.x - (b.x1 + b.x2) / 2, y: i.y - b.y1 + top });
      top += b.y2 - b.y1 + RANK_GAP;
    }
    const lower = new Set(ys.slice(f).flatMap((y) => ranks.get(y)));
    const last = [...lower].filter((i) => i.n.indegree() > 1 && i.n.outdegree() === 0);
    const owned = new Set(last);
    const units = [];
    const claim = (it) => { // it and what it alone leads to, below the fold
      const unit = [it];
      owned.add(it);
      for (let k = 0; k < unit.length; k++) {
        unit[k].n.outgoers('node').forEach((m) => {
          const mi = items.get(m.id());
          if (lower.has(mi) && !owned.has(mi) && m.incomers('node').every((p) => unit.includes(items.get(p.id())))) { owned.add(mi); unit.push(mi); }
        });
      }
      return unit;
    };
    for (const y of ys.slice(f)) for (const it of ranks.get(y).sort((a, b) => a.x - b.x)) if (!owned.has(it)) units.push(claim(it));
    // Within a unit each rank's nodes are centred under its first, so a claim stands over its
    // source, however far apart dagre put them to spare the crossings of the whole.
    for (const u of units) {
      const rows = new Map();
      for (const i of u) rows.set(Math.round(i.y), (rows.get(Math.round(i.y)) || []).concat([i]));
      for (const row of rows.values()) {
        row.sort((a, b) => a.x - b.x);
        let x = u[0].x - (row.reduce((s, i) => s + i.x2 - i.x1, 0) + (row.length - 1) * NODE_GAP) / 2;
        for (const i of row) { const w = i.x2 - i.x1; i.x = x + w / 2; i.x1 = x; i.x2 = x + w; x += w + NODE_GAP; }
      }
    }
    const strip = (list) => { // units side by side, each keeping its ranks' heights
      const b = list.map(box);
      const w = b.reduce((s, x) => s + x.x2 - x.x1, 0) + (list.length - 1) * NODE_GAP;
      let x = -w / 2;
      const y1 = Math.min(...b.map((x) => x.y1)), y2 = Math.max(...b.map((x) => x.y2));
      list.forEach((u, k) => {
        for (const i of u) i.n.position({ x: i.x - b[k].x1 + x, y: i.y - y1 + top });
        x += b[k].x2 - b[k].x1 + NODE_GAP;
      });
      top += y2 - y1 + STRIP_GAP;
    };
    for (const group of [units.sort((a, b) => box(a).x1 - box(b).x1), last.sort((a, b) => a.x - b.x).map((i) => [i])]) {
      let cur = [], w = 0;
      for (const u of group) {
        const b = box(u), uw = b.x2 - b.x1;
        if (cur.length && w + NODE_GAP + uw > width) { strip(cur); cur = []; w = 0; }
        w += (cur.length ? NODE_GAP : 0) + uw;
        cur.push(u);
      }
      if (cur.length) strip(cur);
    }
  }

  // fitCanvas sizes the canvas to the graph at a readable zoom, from its least height (62% of
  // the window) up to MAX_CANVAS, and fits the graph in it; a small graph is not blown up past
  // 1.5 times its natural size.
  function fitCanvas(cy, box) {
    if (!cy.nodes().length) return;
    const bb = cy.elements().boundingBox();
    const base = Math.max(380, Math.round(window.innerHeight * 0.62));
    const want = Math.ceil(bb.h * READABLE + 2 * PAD + 4);
    box.style.height = Math.min(MAX_CANVAS, Math.max(base, want)) + 'px';
    cy.resize();
    cy.fit(undefined, PAD);
    if (cy.zoom() > 1.5) { cy.zoom(1.5); cy.center(); }
    if (cy.zoom() < READABLE && want > MAX_CANVAS && bb.w * READABLE + 2 * PAD <= box.clientWidth) {
      // Taller than the tallest canvas: stay readable and start at the top; the rest is a
      // scroll of the list, or a drag, away.
      cy.zoom(READABLE);
      cy.pan({ x: box.clientWidth / 2 - (bb.x1 + bb.w / 2) * READABLE, y: PAD - bb.y1 * READABLE });
    }
  }

  function zoomBy(cy, k) {
    cy.zoom({ level: cy.zoom() * k, renderedPosition: { x: cy.width() / 2, y: cy.height() / 2 } });
  }

  // reveal brings a node chosen from the list into sight: into the canvas's view, at a zoom
  // it can be read at, and the canvas into the window.
  function reveal(cy, box, node) {
    const in_ = (b, w, h) => b.x1 >= 0 && b.y1 >= 0 && b.x2 <= w && b.y2 <= h;
    if (cy.zoom() < READABLE * 0.95 || !in_(node.renderedBoundingBox(), cy.width(), cy.height())) {
      cy.zoom(Math.max(cy.zoom(), READABLE));
      cy.center(node);
    }
    const r = box.getBoundingClientRect(), b = node.renderedBoundingBox();
    const top = r.top + b.y1, bottom = r.top + b.y2;
    if (top < 0 || bottom > window.innerHeight) window.scrollBy(0, (top + bottom) / 2 - window.innerHeight / 2);
  }

  // graphBox lays out a graph and, beside it, the same nodes as a list of buttons (the way to
  // reach every node from the keyboard and with a screen reader), the selected node's details,
  // and the edges as text.
  function graphBox(g, later) {
    const box = el('div', { id: 'graph', role: 'img', 'aria-label': 'Graph of ' + g.nodes.length + ' nodes; the same nodes are listed beside it' });
    const details = el('div', { class: 'details', id: 'details', 'aria-live': 'polite' }, 'Select a node.');
    const buttons = new Map();
    const byId = new Map(g.nodes.map((n) => [n.id, n]));
    let cy = null;
    const select = (id, focus) => {
      const n = byId.get(id);
      if (!n) return;
      S.selected = { route: location.hash, key: n.key };
      for (const [bid, b] of buttons) b.setAttribute('aria-pressed', bid === id ? 'true' : 'false');
      if (cy) {
        cy.$(':selected').unselect();
        const node = cy.getElementById(id);
        node.select();
        if (focus === 'list') reveal(cy, box, node);
      }
      details.replaceChildren(
        el('dl', {}, n.fields.filter(([, v]) => v !== '' && v !== undefined).map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])),
        n.links.length ? el('p', {}, 'Open: ', n.links.map(([v, a], i) => [i ? ' · ' : '', link(v, a, v)])) : '');
      if (focus === true) buttons.get(id).focus();
    };
    const list = el('ol', { class: 'nodes', 'aria-label': 'Nodes of the graph' }, g.nodes.map((n) => {
      const cls = nodeClasses(n).join(' ');
      const b = el('button', { type: 'button', class: cls, 'data-node-id': n.id, 'data-node-key': n.key, 'data-kind': n.kind,
        'data-state': n.state || '', 'data-review': n.review || '', 'aria-pressed': 'false',
        on: { click: () => select(n.id, 'list'), focus: () => select(n.id, 'list') } }, n.lines.join('\n'));
      buttons.set(n.id, b);
      return el('li', {}, b);
    }));
    const names = new Map(g.nodes.map((n) => [n.id, n.lines[0]]));
    const edges = el('details', {}, el('summary', {}, 'Edges (' + g.edges.length + ')'),
      el('ul', { class: 'edges' }, g.edges.map((e) => el('li', { 'data-from': byId.get(e.from).key, 'data-to': byId.get(e.to).key, 'data-label': e.label },
        names.get(e.from) + ' — ' + e.label + ' → ' + names.get(e.to)))));
    later.push(() => {
      if (typeof cytoscape === 'function') {
        // Wheel zooming is off: over a canvas taller than the window the wheel must scroll the
        // page. Ctrl (or ⌘) with the wheel zooms, and so do the buttons above the graph.
        cy = cytoscape({ container: box, elements: layout(g, box.clientWidth - 2 * PAD), style: STYLE, layout: { name: 'preset', fit: false },
          minZoom: 0.2, maxZoom: 3, boxSelectionEnabled: false, autoungrabify: true, userZoomingEnabled: false });
        fitCanvas(cy, box);
        cy.on('tap', 'node', (ev) => select(ev.target.id(), true));
        box.addEventListener('wheel', (ev) => {
          if (!ev.ctrlKey && !ev.metaKey) return;
          ev.preventDefault();
          const r = box.getBoundingClientRect();
          cy.zoom({ level: cy.zoom() * (ev.deltaY < 0 ? 1.15 : 1 / 1.15), renderedPosition: { x: ev.clientX - r.left, y: ev.clientY - r.top } });
        }, { passive: false });
        zoomIn.addEventListener('click', () => zoomBy(cy, 1.25));
        zoomOut.addEventListener('click', () => zoomBy(cy, 0.8));
        zoomFit.addEventListener('click', () => fitCanvas(cy, box));
        current = cy;
        box.setAttribute('data-drawn', String(cy.nodes(':childless').length));
      }
      const keep = (S.selected && S.selected.route === location.hash && g.nodes.find((n) => n.key === S.selected.key)) || g.nodes[0];
      if (keep) select(keep.id, false);
    });
    const zoomIn = el('button', { type: 'button', 'aria-label': 'Zoom in' }, '+');
    const zoomOut = el('button', { type: 'button', 'aria-label': 'Zoom out' }, '−');
    const zoomFit = el('button', { type: 'button' }, 'Fit');
    const tools = el('div', { class: 'zoom' }, zoomOut, zoomIn, zoomFit, el('span', { class: 'hint' }, 'Ctrl + wheel zooms; drag to pan'));
    return el('div', { class: 'graphbox' }, el('div', {}, tools, box), el('div', { class: 'side' }, details, el('h2', {}, 'Nodes'), list, edges));
  }

  if (typeof cytoscape === 'function' && typeof cytoscapeDagre === 'function') cytoscape.use(cytoscapeDagre);
  boot();
})();

// swarm serve's page: one team live over server-sent events, and the actions a person
// takes on it. No framework, no build step. Everything the team wrote (names, messages,
// plans, pane text) is untrusted: it only ever reaches the page as text nodes.
// The session's key lives in this tab's sessionStorage and goes out in a header, never in
// a cookie (a browser would send a cookie to every port of the host).
'use strict';

const PARTS = ['team', 'members', 'tasks', 'feed', 'approvals', 'mergeQueue', 'panes', 'notices'];
const COLOURS = ['red', 'blue', 'green', 'yellow', 'purple', 'orange', 'pink', 'cyan'];

const SESSION = 'swarm-session';

const state = {
  session: null,
  teams: [],
  team: null,
  parts: {},
  selected: 0,
  stream: null,
  seenNotices: 0,
  // What a person set on a request's card (mode, feedback, rejecting), kept across redraws.
  drafts: {},
};

const $ = (id) => document.getElementById(id);

// An element with attributes and children (strings become text nodes, never HTML).
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const colour = (name) => (COLOURS.includes(name) ? 'c-' + name : 'c-none');

function memberColour(name) {
  const short = String(name || '').split('@')[0];
  const m = (state.parts.members || []).find((x) => x.name === short);
  return colour(m && m.color);
}

function who(name) {
  return h('span', { class: 'who ' + memberColour(name) }, name);
}

function ago(ms) {
  if (!ms) return '';
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 5) return 'now';
  if (s < 60) return s + 's ago';
  if (s < 3600) return Math.floor(s / 60) + 'm ago';
  return Math.floor(s / 3600) + 'h ago';
}

function clock(ms) {
  if (!ms) return '';
  const d = new Date(ms);
  return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

function tokens(n) {
  if (n >= 1e6) return (n / 1e6).toFixed(1) + 'M';
  if (n >= 1e3) return (n / 1e3).toFixed(1) + 'k';
  return String(n);
}

// The key the login redirect left in the address (`#session=…`), moved into this tab's
// sessionStorage and out of the address bar; else the one kept there.
function takeSession() {
  const m = location.hash.match(/^#session=([0-9a-f]+)$/);
  if (m) {
    sessionStorage.setItem(SESSION, m[1]);
    history.replaceState(null, '', location.pathname);
  }
  return sessionStorage.getItem(SESSION);
}

// Shows only `text`: the page has no session (any more).
function shutOut(text) {
  sessionStorage.removeItem(SESSION);
  state.session = null;
  if (state.stream) state.stream.abort();
  document.body.replaceChildren(h('p', { id: 'shut-out', class: 'shut-out' }, text));
}

const AGAIN = 'This session is over (it expired, or the server restarted): open the address swarm serve printed again.';

async function api(method, path, body) {
  const headers = { 'X-Swarm-Session': state.session || '' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit',
  });
  let data = null;
  try {
    data = await r.json();
  } catch (_) {
    data = null;
  }
  if (r.status === 401) shutOut(AGAIN);
  if (!r.ok) throw new Error((data && data.error && data.error.message) || r.status + ' ' + r.statusText);
  return data;
}

function toast(text, ok) {
  if (!state.session) return;
  const t = h('div', { class: 'toast ' + (ok ? 'ok' : 'bad'), role: 'status' }, text);
  $('toasts').append(t);
  setTimeout(() => t.remove(), ok ? 5000 : 10000);
}

const teamPath = (rest) => '/api/teams/' + encodeURIComponent(state.team) + rest;

// ---- rendering, one function per part ----

const render = {
  team(p) {
    $('description').textContent = p.error || p.description || '';
    const b = $('budget');
    b.hidden = !p.budget;
    if (p.budget) {
      b.textContent = p.budget.line;
      b.classList.toggle('warn', (p.budget.share || 0) >= 0.8);
    }
    const problems = $('problems');
    const list = (p.problems || []).concat(p.tmuxReachable === false ? ['tmux server not reachable: pane facts unknown'] : []);
    problems.hidden = list.length === 0 && !p.error;
    problems.replaceChildren(...list.map((x) => h('div', {}, x)));
    if (p.error) problems.append(h('div', {}, p.error));
  },

  members(list) {
    $('members-count').textContent = list.length;
    $('members').replaceChildren(...list.map(memberCard));
    // For scripts/bench: when the main view first showed the team.
    if (!performance.getEntriesByName('swarm-team-shown').length) performance.mark('swarm-team-shown');
    const to = $('send-to');
    const keep = to.value;
    to.replaceChildren(
      h('option', { value: '*' }, 'everyone'),
      ...list.filter((m) => m.name !== 'team-lead').map((m) => h('option', { value: m.name }, m.name)),
      h('option', { value: 'team-lead' }, 'team-lead'),
    );
    if ([...to.options].some((o) => o.value === keep)) to.value = keep;
    // Names are coloured from the members: draw the others again.
    for (const name of ['tasks', 'feed', 'approvals']) if (state.parts[name]) render[name](state.parts[name]);
  },

  tasks(list) {
    const open = list.filter((t) => t.board !== 'done').length;
    $('tasks-count').textContent = open + ' open · ' + (list.length - open) + ' done';
    const columns = ['active', 'ready', 'blocked', 'done'].map((board) =>
      h('div', { class: 'column', dataset: { board } },
        h('h3', {}, board, ' ', h('span', { class: 'count' }, list.filter((t) => t.board === board).length)),
        ...list.filter((t) => t.board === board).map(taskCard)));
    $('tasks').replaceChildren(...columns);
  },

  feed(list) {
    const feed = $('feed');
    const atBottom = feed.scrollHeight - feed.scrollTop - feed.clientHeight < 40;
    feed.replaceChildren(...list.slice(-200).map(feedEntry));
    if (atBottom) feed.scrollTop = feed.scrollHeight;
  },

  approvals(list) {
    $('approvals-panel').hidden = list.length === 0;
    $('approvals-count').textContent = list.length;
    state.selected = Math.min(state.selected, Math.max(0, list.length - 1));
    const focused = document.activeElement && document.activeElement.closest('.approval');
    const refocus = focused && focused.dataset.id;
    for (const id of Object.keys(state.drafts)) {
      if (!list.some((a) => a.requestId === id)) delete state.drafts[id];
    }
    $('approvals').replaceChildren(...list.map(approvalCard));
    if (refocus) {
      const again = document.querySelector('.approval[data-id="' + CSS.escape(refocus) + '"] textarea');
      if (again && state.drafts[refocus] && state.drafts[refocus].rejecting) again.focus();
    }
    document.title = (list.length ? '(' + list.length + ') ' : '') + 'swarm · ' + (state.team || '');
  },

  mergeQueue(list) {
    $('merge-panel').hidden = list.length === 0;
    $('merge').replaceChildren(...list.map(mergeEntry));
  },

  panes(list) {
    $('panes-panel').hidden = list.length === 0;
    const panes = $('panes');
    const byName = new Map([...panes.children].map((el) => [el.dataset.name, el]));
    const next = list.map((p) => {
      const el = byName.get(p.name) || h('figure', { class: 'pane', dataset: { name: p.name } },
        h('figcaption', {}), h('pre', {}));
      el.querySelector('figcaption').replaceChildren(who(p.name), h('span', { class: 'dim' }, ' ' + p.pane));
      const pre = el.querySelector('pre');
      const stick = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 20;
      if (pre.textContent !== p.text) pre.textContent = p.text;
      if (stick) pre.scrollTop = pre.scrollHeight;
      return el;
    });
    panes.replaceChildren(...next);
  },

  notices(list) {
    // Each notice once, as a toast; those from before the page connected are history.
    list.filter((n) => n.atMs > state.seenNotices).forEach((n) => toast(n.text, n.ok));
    state.seenNotices = Math.max(state.seenNotices, ...list.map((n) => n.atMs));
  },
};

function memberCard(m) {
  const lead = m.name === 'team-lead';
  const task = m.currentTask ? '#' + m.currentTask : '';
  const model = [m.provider, m.model].filter(Boolean).join(' / ');
  const u = m.usage || {};
  const used = (u.input_tokens || 0) + (u.output_tokens || 0) + (u.cache_read_input_tokens || 0) + (u.cache_creation_input_tokens || 0);
  const canStop = !lead && (m.alive || m.paneAlive);
  return h('article', { class: 'member ' + colour(m.color), dataset: { name: m.name, state: m.state } },
    h('header', {},
      h('span', { class: 'dot' }),
      h('strong', { class: 'who ' + colour(m.color) }, m.name),
      h('span', { class: 'state s-' + m.state }, m.state),
      canStop ? h('button', { class: 'ghost small shutdown', title: 'shut ' + m.name + ' down', onclick: () => shutDown(m.name) }, 'stop') : null),
    m.detail || m.lastError ? h('div', { class: 'detail' }, [m.detail, m.lastError && 'last error: ' + m.lastError].filter(Boolean).join(' · ')) : null,
    h('dl', {},
      h('dt', {}, 'task'), h('dd', { class: 'task-ref' }, task || '—'),
      h('dt', {}, 'model'), h('dd', {}, model || '—'),
      h('dt', {}, 'engine'), h('dd', {}, m.engine + (m.mode ? ' · ' + m.mode : '')),
      h('dt', {}, 'host'), h('dd', {}, m.host || '—'),
      h('dt', {}, 'active'), h('dd', { class: 'ago', dataset: { ms: m.lastActivityMs || '' } }, ago(m.lastActivityMs) || '—'),
      h('dt', {}, 'tokens'), h('dd', {}, tokens(used) + ' · $' + (m.costUsd || 0).toFixed(4))));
}

function taskCard(t) {
  return h('div', { class: 'task b-' + t.board, dataset: { id: t.id } },
    h('div', { class: 'task-head' }, h('span', { class: 'dim' }, '#' + t.id), ' ', t.subject),
    h('div', { class: 'task-meta' },
      t.owner ? who(t.owner) : h('span', { class: 'dim' }, 'unowned'),
      (t.blockedBy || []).length ? h('span', { class: 'deps' }, ' needs ' + t.blockedBy.map((b) => '#' + b).join(', ')) : null,
      t.board === 'active' && t.activeForm ? h('span', { class: 'dim' }, ' · ' + t.activeForm) : null));
}

function feedEntry(e) {
  const row = h('div', { class: 'entry k-' + e.class + (e.unread ? ' unread' : ''), tabindex: 0 },
    h('span', { class: 'time dim' }, clock(e.atMs)),
    h('span', { class: 'route' }, who(e.from), h('span', { class: 'dim' }, ' → '), who(e.to)),
    h('span', { class: 'line' }, e.line, e.count > 1 ? h('span', { class: 'dim' }, ' ×' + e.count) : null));
  const full = e.text && e.text.trim() !== e.line.trim() ? e.text : null;
  if (full) {
    row.classList.add('more');
    row.addEventListener('click', () => {
      const open = row.querySelector('pre');
      if (open) open.remove();
      else row.append(h('pre', { class: 'full' }, full));
    });
  }
  return row;
}

function approvalCard(a, i) {
  const plan = a.kind === 'plan';
  const detail = typeof a.detail === 'string' ? a.detail : JSON.stringify(a.detail, null, 2);
  const draft = state.drafts[a.requestId] || (state.drafts[a.requestId] = {});
  const modes = ['default', 'acceptEdits', 'bypassPermissions', 'plan'];
  const chosen = draft.mode || a.mode || 'default';
  const mode = plan ? h('select', { class: 'mode', 'aria-label': 'mode after approval', onchange: (ev) => { draft.mode = ev.target.value; } },
    ...modes.map((m) => h('option', { value: m, selected: m === chosen }, m))) : null;
  const feedback = h('textarea', { class: 'feedback', rows: 2, placeholder: plan ? 'what to change (required to reject a plan)' : 'why (optional)', oninput: (ev) => { draft.feedback = ev.target.value; } });
  feedback.value = draft.feedback || '';
  const card = h('article', { class: 'approval' + (i === state.selected ? ' selected' : '') + (draft.rejecting ? ' rejecting' : ''), dataset: { id: a.requestId, agent: a.agent } },
    h('header', {}, who(a.agent), ' ', h('span', { class: 'kind' }, plan ? 'asks to approve a plan' : 'asks permission'),
      h('span', { class: 'dim' }, ' · ' + ago(a.createdMs))),
    h('div', { class: 'summary' }, a.summary),
    h('pre', { class: 'detail' }, detail),
    feedback,
    h('div', { class: 'buttons' },
      mode,
      h('button', { class: 'approve', onclick: () => decide(a, true, card) }, 'Approve (a)'),
      h('button', { class: 'reject danger', onclick: () => startReject(card) }, 'Reject (r)')));
  feedback.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey) {
      ev.preventDefault();
      decide(a, false, card);
    } else if (ev.key === 'Escape') {
      card.classList.remove('rejecting');
      draft.rejecting = false;
      feedback.blur();
    }
  });
  card.addEventListener('click', () => select([...$('approvals').children].indexOf(card)));
  return card;
}

function mergeEntry(e) {
  const held = e.state === 'conflict' || e.state === 'check_failed';
  return h('div', { class: 'merge-entry m-' + e.state, dataset: { branch: e.branch } },
    who(e.agent), ' ', h('code', {}, e.branch), ' ', h('span', { class: 'state' }, e.state.replace('_', ' ')),
    e.conflicts && e.conflicts.length ? h('span', { class: 'dim' }, ' · ' + e.conflicts.join(', ')) : null,
    e.handedBack ? h('span', { class: 'dim' }, ' · ' + e.handedBack) : null,
    held ? h('button', { class: 'small retry', onclick: () => retry(e.branch) }, 'retry') : null,
    e.checkOutput && held ? h('pre', { class: 'detail' }, e.checkOutput) : null);
}

// ---- actions ----

async function decide(a, approve, card) {
  const body = { approve };
  const feedback = card.querySelector('textarea').value.trim();
  if (feedback) body.feedback = feedback;
  const mode = card.querySelector('select.mode');
  if (approve && mode) body.mode = mode.value;
  if (!approve && a.kind === 'plan' && !feedback) {
    startReject(card);
    toast('rejecting a plan needs feedback saying what to change', false);
    return;
  }
  card.classList.add('busy');
  try {
    const r = await api('POST', teamPath('/approvals/' + encodeURIComponent(a.requestId)), body);
    toast(r.approval.state + ' ' + r.approval.agent + "'s request", true);
  } catch (e) {
    toast(e.message, false);
  } finally {
    card.classList.remove('busy');
  }
}

function startReject(card) {
  card.classList.add('rejecting');
  (state.drafts[card.dataset.id] || {}).rejecting = true;
  card.querySelector('textarea').focus();
}

async function shutDown(name) {
  if (!confirm('Shut ' + name + ' down? It is asked first, then stopped.')) return;
  try {
    await api('POST', teamPath('/members/' + encodeURIComponent(name) + '/shutdown'), {});
    toast('shutting ' + name + ' down…', true);
  } catch (e) {
    toast(e.message, false);
  }
}

async function retry(branch) {
  try {
    await api('POST', teamPath('/merge-queue/retry'), { branch });
    toast(branch + ' is queued again', true);
  } catch (e) {
    toast(e.message, false);
  }
}

async function send(ev) {
  ev.preventDefault();
  const text = $('send-text').value;
  if (!text.trim()) return;
  const to = $('send-to').value;
  $('send').disabled = true;
  try {
    const r = await api('POST', teamPath('/messages'), { to, text });
    $('send-text').value = '';
    toast('sent to ' + (r.sent.map((s) => s.to).join(', ') || 'nobody'), true);
  } catch (e) {
    toast(e.message, false);
  } finally {
    $('send').disabled = false;
  }
}

// ---- keyboard ----

function select(i) {
  const cards = [...$('approvals').children];
  if (!cards.length) return;
  state.selected = (i + cards.length) % cards.length;
  cards.forEach((c, j) => c.classList.toggle('selected', j === state.selected));
  cards[state.selected].scrollIntoView({ block: 'nearest' });
}

function selectedApproval() {
  const list = state.parts.approvals || [];
  const card = $('approvals').children[state.selected];
  return card && list[state.selected] ? [list[state.selected], card] : null;
}

function onKey(ev) {
  if (!state.session) return;
  const typing = ev.target.closest('input, textarea, select');
  if (ev.key === 'Escape') {
    if (typing) ev.target.blur();
    if ($('help').open) $('help').close();
    return;
  }
  if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const picked = selectedApproval();
  switch (ev.key) {
    case 'j': select(state.selected + 1); break;
    case 'k': select(state.selected - 1); break;
    case 'a': if (picked) decide(picked[0], true, picked[1]); break;
    case 'r': if (picked) { ev.preventDefault(); startReject(picked[1]); } break;
    case 'm': ev.preventDefault(); $('send-text').focus(); break;
    case 't': nextTeam(); break;
    case '?': $('help').showModal(); break;
    default: return;
  }
}

// ---- the team and its stream ----

function connect(team) {
  if (state.stream) state.stream.abort();
  state.team = team;
  state.parts = {};
  state.seenNotices = Date.now() - 2000;
  for (const id of ['members', 'tasks', 'feed', 'approvals', 'merge', 'panes']) $(id).replaceChildren();
  $('team').value = team;
  if (location.hash.slice(1) !== team) history.replaceState(null, '', '#' + encodeURIComponent(team));
  state.stream = new AbortController();
  follow(teamPath('/events'), state.stream.signal);
}

function onPart(part, data, id) {
  if (!PARTS.includes(part)) return;
  const value = JSON.parse(data);
  state.parts[part] = value;
  render[part](value);
  document.body.dataset.version = id;
}

// The team's event stream, read with fetch (an EventSource cannot send the session's
// header), again after a pause whenever it breaks, until aborted or refused.
async function follow(path, signal) {
  let pause = 500;
  while (!signal.aborted) {
    try {
      const r = await fetch(path, { headers: { 'X-Swarm-Session': state.session }, credentials: 'omit', signal });
      if (r.status === 401) return shutOut(AGAIN);
      if (!r.ok) throw new Error(r.status + ' ' + r.statusText);
      setLink(true);
      pause = 500;
      await readEvents(r.body, onPart);
    } catch (_) {
      if (signal.aborted) return;
    }
    setLink(false);
    await new Promise((done) => setTimeout(done, pause));
    pause = Math.min(pause * 2, 10000);
  }
}

// Server-sent events from a response body: calls `on(name, data, id)` for each.
async function readEvents(body, on) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      const ev = { name: 'message', data: [], id: '' };
      for (const line of block.split('\n')) {
        if (!line || line.startsWith(':')) continue;
        const i = line.indexOf(':');
        const field = i < 0 ? line : line.slice(0, i);
        const v = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
        if (field === 'event') ev.name = v;
        else if (field === 'data') ev.data.push(v);
        else if (field === 'id') ev.id = v;
      }
      if (ev.data.length) on(ev.name, ev.data.join('\n'), ev.id);
    }
  }
}

function setLink(up) {
  const link = $('link');
  if (!link) return;
  link.textContent = up ? 'live' : 'reconnecting…';
  link.classList.toggle('up', up);
}

function nextTeam() {
  if (state.teams.length < 2) return;
  const i = state.teams.findIndex((t) => t.name === state.team);
  connect(state.teams[(i + 1) % state.teams.length].name);
}

async function start() {
  document.addEventListener('keydown', onKey);
  $('send-form').addEventListener('submit', send);
  $('team').addEventListener('change', (ev) => connect(ev.target.value));
  $('help-button').addEventListener('click', () => $('help').showModal());
  $('help-close').addEventListener('click', () => $('help').close());
  window.addEventListener('hashchange', () => {
    if (location.hash.startsWith('#session=')) return location.reload();
    const t = decodeURIComponent(location.hash.slice(1));
    if (t && t !== state.team && state.teams.some((x) => x.name === t)) connect(t);
  });
  setInterval(() => {
    for (const el of document.querySelectorAll('.ago[data-ms]')) el.textContent = ago(Number(el.dataset.ms)) || '—';
  }, 5000);
  state.session = takeSession();
  if (!state.session) {
    shutOut('This page needs the access token: open the address swarm serve printed.');
    return;
  }
  let session;
  try {
    session = await api('GET', '/api/session');
  } catch (e) {
    if (state.session) $('link').textContent = e.message;
    return;
  }
  state.teams = session.teams;
  $('team').replaceChildren(...session.teams.map((t) => h('option', { value: t.name }, t.name)));
  if (!session.teams.length) {
    $('description').textContent = 'no team yet: start one with `swarm run` and reload';
    return;
  }
  const wanted = decodeURIComponent(location.hash.slice(1));
  connect(session.teams.some((t) => t.name === wanted) ? wanted : session.teams[0].name);
}

start();

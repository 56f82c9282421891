// browserd inspector: profiles, windows and the selected window, live from browserd's event streams.
// Plain JavaScript, no build step, no request outside this server. The profile directory, each
// profile's windows and the selected window each come from one stream, resumed with their last
// event id after a drop (a `reset` brings the whole state when the position was lost). Only which
// renderer holds which profile is read every 2 s (no stream carries it), while the page is visible.
"use strict";

const $ = (id) => document.getElementById(id);
const el = (tag, props = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== undefined && value !== null) node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
};

// ---- talking to browserd ------------------------------------------------------------------------

const auth = { token: sessionStorage.getItem("browserd.token"), required: false };

function showError(message) {
  $("error-text").textContent = message;
  $("error").hidden = false;
}
$("error-close").addEventListener("click", () => { $("error").hidden = true; });

function setStatus(text, bad = false) {
  $("status").textContent = text;
  $("status").classList.toggle("bad", bad);
}

/** A REST call; a problem+json answer becomes an Error with its detail. */
async function api(method, path, body, headers = {}) {
  const init = { method, headers: { ...headers } };
  if (auth.token) init.headers.Authorization = `Bearer ${auth.token}`;
  // Every POST says it is JSON, even without a body: browserd refuses other POSTs without a token (CSRF).
  if (body !== undefined || method === "POST") init.headers["Content-Type"] = "application/json";
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(path, init);
  if (response.status === 401) {
    askForToken();
    throw new Error("this server needs a token");
  }
  const text = await response.text();
  const json = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const problem = json || {};
    throw new Error(`${method} ${path}: ${response.status} ${problem.title || ""}${problem.detail ? ": " + problem.detail : ""}`);
  }
  return json;
}

/** Runs an action from the page; its error is shown, never swallowed. */
function act(promise) {
  promise.catch((error) => showError(error.message));
}

function askForToken() {
  auth.required = true;
  $("login").hidden = false;
  setStatus("sign in", true);
}

$("login").addEventListener("submit", (event) => {
  event.preventDefault();
  auth.token = $("token").value.trim();
  sessionStorage.setItem("browserd.token", auth.token);
  $("login").hidden = true;
  $("forget").hidden = false;
  start();
});
$("forget").addEventListener("click", () => {
  sessionStorage.removeItem("browserd.token");
  location.reload();
});

/**
 * One event stream: opens (with a ticket when a token is in use), dispatches named events, and
 * after a drop opens again from its last event id.
 */
class Stream {
  constructor(path, handlers, onState) {
    this.path = path;
    this.handlers = handlers;
    this.onState = onState || (() => {});
    this.lastEventId = null;
    this.closed = false;
    this.source = null;
    this.retry = null;
    this.open();
  }

  async url() {
    let url = this.path;
    if (auth.token) {
      const ticket = await api("POST", "/v1/stream-tickets", { path: this.path });
      url = ticket.url;
    }
    if (this.lastEventId) url += (url.includes("?") ? "&" : "?") + "lastEventId=" + encodeURIComponent(this.lastEventId);
    return url;
  }

  async open() {
    if (this.closed) return;
    let url;
    try {
      url = await this.url();
    } catch (error) {
      this.onState("down");
      this.again(2000);
      return;
    }
    if (this.closed) return;
    const source = new EventSource(url);
    this.source = source;
    source.onopen = () => this.onState("up");
    source.onerror = () => {
      this.onState("down");
      // A ticket opens a stream once: reconnect by hand with a new one and the last id.
      if (auth.token || source.readyState === EventSource.CLOSED) {
        source.close();
        this.again(1000);
      }
    };
    for (const name of Object.keys(this.handlers)) {
      source.addEventListener(name, (event) => {
        if (event.lastEventId) this.lastEventId = event.lastEventId;
        try {
          this.handlers[name](JSON.parse(event.data));
        } catch (error) {
          showError(`${name}: ${error.message}`);
        }
      });
    }
  }

  again(ms) {
    clearTimeout(this.retry);
    this.retry = setTimeout(() => { if (this.source) this.source.close(); this.open(); }, ms);
  }

  close() {
    this.closed = true;
    clearTimeout(this.retry);
    if (this.source) this.source.close();
  }
}

// ---- profiles and windows (left) ------------------------------------------------------------------

const profiles = new Map(); // id -> {profile, stream, windows: Map(id -> item), node}
let directory = null;
let selected = null; // the selected window's id

function profileNode(entry) {
  const p = entry.profile;
  if (!entry.node) {
    entry.list = el("ul", { "aria-label": `Windows of ${p.name || p.id}` });
    entry.label = el("span");
    entry.children = el("ul");
    entry.node = el("li", { class: "profile", dataset: { profile: p.id } }, entry.label, entry.list, entry.children);
  }
  entry.node.classList.toggle("incognito", p.incognito);
  if (!entry.renderedBy) {
    entry.renderedBy = el("small", { class: "rendered-by" });
    entry.label.after(entry.renderedBy);
  }
  paintRenderedBy(entry);
  entry.label.textContent = p.incognito ? `incognito of ${profiles.get(p.parentId)?.profile.name || p.parentId}` : (p.name || p.id);
  entry.label.title = p.id;
  return entry.node;
}

function placeProfile(entry) {
  const node = profileNode(entry);
  const parent = entry.profile.parentId && profiles.get(entry.profile.parentId);
  (parent ? parent.children : $("profiles")).append(node);
}

function windowButton(profileId, item) {
  const button = el("button", {
    type: "button", class: "window-link", dataset: { browser: item.id },
    onclick: () => selectWindow(item.id, profileId),
  }, `window ${item.id}`);
  if (item.id === selected) button.setAttribute("aria-current", "true");
  return el("li", {}, button);
}

function addProfile(profile) {
  let entry = profiles.get(profile.id);
  if (entry) {
    entry.profile = profile;
    profileNode(entry);
    return;
  }
  entry = { profile, windows: new Map() };
  profiles.set(profile.id, entry);
  placeProfile(entry);
  if (wanted.profile === profile.id) {
    entry.label.setAttribute("aria-current", "true");
    entry.node.scrollIntoView({ block: "nearest" });
  }
  const renderWindows = () => {
    entry.list.replaceChildren(...[...entry.windows.values()].map((item) => windowButton(profile.id, item)));
  };
  entry.stream = new Stream(`/v1/events?profileId=${encodeURIComponent(profile.id)}`, {
    "browsers.populate": (data) => {
      entry.windows = new Map(data.browsers.map((b) => [b.id, b]));
      renderWindows();
      if (wanted.browser && entry.windows.has(wanted.browser)) selectWindow(wanted.browser, profile.id);
    },
    "browsers.add": (data) => { entry.windows.set(data.browser.id, data.browser); entry.list.append(windowButton(profile.id, data.browser)); },
    "browsers.remove": (data) => {
      entry.windows.delete(data.browserId);
      entry.list.querySelector(`[data-browser="${data.browserId}"]`)?.parentElement.remove();
    },
    "profile.deleted": () => removeProfile(profile.id),
    reset: (data) => { entry.windows = new Map(data.browsers.map((b) => [b.id, b])); renderWindows(); },
  });
}

function removeProfile(id) {
  const entry = profiles.get(id);
  if (!entry) return;
  entry.stream.close();
  entry.node.remove();
  profiles.delete(id);
}

function setProfiles(items) {
  const ids = new Set(items.map((p) => p.id));
  for (const id of [...profiles.keys()]) if (!ids.has(id)) removeProfile(id);
  // Regular profiles first, so an incognito profile finds its parent.
  for (const p of items.filter((p) => !p.incognito)) addProfile(p);
  for (const p of items.filter((p) => p.incognito)) addProfile(p);
}

async function loadProfiles() {
  // A profile token may not watch the directory: it lists its own profiles once.
  const items = [];
  let cursor = null;
  do {
    const page = await api("GET", "/v1/profiles?limit=100" + (cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""));
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  setProfiles(items);
}

// ---- renderers: who renders which profile (issue 55) -------------------------------------------------

const rendering = { byProfile: new Map(), timer: null }; // profile id -> renderer name

function paintRenderedBy(entry) {
  if (!entry.renderedBy) return;
  const name = rendering.byProfile.get(entry.profile.incognito ? entry.profile.parentId : entry.profile.id);
  entry.renderedBy.textContent = name ? `rendered by ${name}` : "";
  entry.renderedBy.hidden = !name;
  entry.node.dataset.renderer = name || "";
}

function renderRenderers(items) {
  $("renderers").replaceChildren(...items.map((r) => el("li", { dataset: { renderer: r.name } },
    el("strong", {}, r.name), ` ${r.profiles.length}/${r.capacity} profiles`,
    r.draining ? el("span", { class: "draining" }, " draining") : "")));
  $("renderers-pane").hidden = false;
}

/** Reads the renderers (administrator), or each of one's own profiles' renderer (a profile token). */
async function loadRendering() {
  if (document.hidden) return;
  const byProfile = new Map();
  const headers = auth.token ? { Authorization: `Bearer ${auth.token}` } : {};
  const response = await fetch("/v1/renderers", { headers });
  if (response.status === 501) return stopRendering(); // this server assigns no renderers
  if (response.ok) {
    const items = (await response.json()).items;
    for (const r of items) for (const held of r.profiles) byProfile.set(held.profileId, r.name);
    renderRenderers(items);
  } else if (response.status === 403) {
    for (const entry of profiles.values()) {
      if (entry.profile.incognito) continue;
      const answer = await fetch(`/v1/profiles/${encodeURIComponent(entry.profile.id)}/rendering`, { headers });
      const renderer = answer.ok ? (await answer.json()).renderer : null;
      if (renderer) byProfile.set(entry.profile.id, renderer.name);
    }
  } else return;
  rendering.byProfile = byProfile;
  for (const entry of profiles.values()) paintRenderedBy(entry);
}

function stopRendering() {
  clearInterval(rendering.timer);
  rendering.timer = null;
}

function watchRendering() {
  const read = () => loadRendering().catch(() => {}); // a failed read is tried again in 2 s
  read();
  rendering.timer = setInterval(read, 2000);
  document.addEventListener("visibilitychange", read);
}

// ---- the selected window (main) ---------------------------------------------------------------------

const view = {
  stream: null,
  tabs: new Map(), // id -> {item, node}
  order: [], // ids in order
  selectedId: null,
  groups: new Map(), // id -> group item
  tree: null,
  dirtyGroups: new Set(),
};

const wanted = (() => {
  const query = new URLSearchParams(location.search);
  return { browser: query.get("browser"), profile: query.get("profile") };
})();

function selectWindow(id, profileId) {
  if (selected === id && view.stream) return;
  selected = id;
  wanted.browser = null;
  for (const button of document.querySelectorAll(".window-link")) {
    if (button.dataset.browser === id) button.setAttribute("aria-current", "true");
    else button.removeAttribute("aria-current");
  }
  const url = new URL(location.href);
  url.searchParams.set("browser", id);
  if (profileId) url.searchParams.set("profile", profileId);
  history.replaceState(null, "", url);
  openWindow(id);
}

function tabTitle(item) { return item.title || item.url || "(blank)"; }

// ---- the tab grid: each tab as its page looked (its renderer's snapshot), title and favicon under ----

/** A tab's card in the grid (made once per tab, updated in place). */
function gridCard(entry) {
  const item = entry.item;
  const image = el("img", { alt: "", hidden: "" });
  const none = el("span", { class: "none" }, "no snapshot yet");
  const icon = el("span", { class: "favicon", "aria-hidden": "true" });
  const title = el("span", { class: "card-title" });
  const node = el("li", { class: "card", dataset: { tab: item.id } },
    el("button", { type: "button", class: "shot", "aria-label": "Activate", onclick: () => act(api("POST", `/v1/tabs/${item.id}/activate`)) }, image, none),
    el("span", { class: "caption" }, icon, title));
  return { node, image, none, icon, title, etag: null, wanted: null, url: null };
}

/** The favicon: the page's own when it is on this server (the inspector asks nothing of any other
 *  origin), else its monogram, as Chrome shows a site without one. */
function paintFavicon(card, item) {
  const url = item.faviconUrl;
  let host = "";
  try { host = new URL(item.url).hostname.replace(/^www\./, ""); } catch (_) { /* not a URL */ }
  // An address (127.0.0.1, [::1]) names no site: the title's first letter stands for it.
  if (!/[a-z]/i.test(host.replace(/^\[.*\]$/, ""))) host = item.title || "";
  if (url && (url.startsWith(location.origin + "/") || url.startsWith("data:image/"))) {
    card.icon.replaceChildren(el("img", { src: url, alt: "" }));
  } else {
    card.icon.replaceChildren((host[0] || "·").toUpperCase());
  }
}

function paintCard(entry) {
  const { item, card } = entry;
  card.title.textContent = tabTitle(item);
  card.node.title = item.url;
  card.image.alt = `${tabTitle(item)} (snapshot)`;
  paintFavicon(card, item);
  card.node.classList.toggle("active", item.id === view.selectedId);
  if (item.id === view.selectedId) card.node.setAttribute("aria-current", "true");
  else card.node.removeAttribute("aria-current");
  const etag = item.snapshot ? item.snapshot.etag : null;
  if (etag !== card.etag && etag !== card.wanted) loadSnapshot(entry, etag);
}

/** Fetches a tab's snapshot (with the token, so through fetch, shown from a blob). */
async function loadSnapshot(entry, etag) {
  const card = entry.card;
  card.wanted = etag;
  if (!etag) return;
  try {
    const headers = auth.token ? { Authorization: `Bearer ${auth.token}` } : {};
    const response = await fetch(`/v1/tabs/${encodeURIComponent(entry.item.id)}/snapshot`, { headers });
    // Replaced meanwhile (a newer one is on its way) or the tab closed: nothing to show from this one.
    if (!response.ok || card.wanted !== etag) return;
    const blob = await response.blob();
    if (card.url) URL.revokeObjectURL(card.url);
    card.url = URL.createObjectURL(blob);
    card.etag = response.headers.get("ETag")?.replace(/"/g, "") || etag;
    card.image.src = card.url;
    card.image.hidden = false;
    card.none.hidden = true;
  } catch (error) {
    showError(`snapshot of ${entry.item.id}: ${error.message}`);
  }
}

/** The grid in the window's tab order. */
function paintGrid() {
  view.gridDirty = false;
  $("grid").replaceChildren(...view.order.map((id) => view.tabs.get(id)?.card.node).filter(Boolean));
}

function dropCard(entry) {
  if (entry?.card.url) URL.revokeObjectURL(entry.card.url);
}

function renderTab(item) {
  let entry = view.tabs.get(item.id);
  if (!entry) {
    const node = el("li", { class: "tab", draggable: "true", dataset: { tab: item.id } });
    entry = { item, node };
    node.title = "";
    const title = el("span", { class: "title" });
    const group = el("span", { class: "group-label", hidden: "" });
    const opener = el("span", { class: "opener" });
    const bar = el("span", { class: "bar", "aria-hidden": "true" });
    const buttons = el("span", { class: "buttons" },
      el("button", { type: "button", "aria-label": "Activate", onclick: () => act(api("POST", `/v1/tabs/${item.id}/activate`)) }, "Activate"),
      el("button", { type: "button", class: "pin", onclick: () => act(api("POST", `/v1/tabs/${item.id}/${view.tabs.get(item.id).item.pinned ? "unpin" : "pin"}`)) }, "Pin"),
      el("button", { type: "button", "aria-label": "Move left", onclick: () => moveBy(item.id, -1) }, "◀"),
      el("button", { type: "button", "aria-label": "Move right", onclick: () => moveBy(item.id, 1) }, "▶"),
      el("button", { type: "button", class: "close", "aria-label": "Close", onclick: () => act(api("DELETE", `/v1/tabs/${item.id}`)) }, "Close"));
    node.append(group, title, opener, buttons, bar);
    entry.parts = { title, group, opener, bar, pin: buttons.querySelector(".pin") };
    node.addEventListener("dragstart", (event) => { event.dataTransfer.setData("text/plain", item.id); node.classList.add("dragging"); });
    node.addEventListener("dragend", () => node.classList.remove("dragging"));
    node.addEventListener("dragover", (event) => event.preventDefault());
    node.addEventListener("drop", (event) => {
      event.preventDefault();
      const moved = event.dataTransfer.getData("text/plain");
      const index = view.order.indexOf(item.id);
      if (moved && moved !== item.id && index >= 0) act(api("POST", `/v1/tabs/${moved}/move`, { index }));
    });
    entry.card = gridCard(entry);
    view.tabs.set(item.id, entry);
  }
  const old = entry.item;
  entry.item = item;
  const { node, parts } = entry;
  parts.title.textContent = tabTitle(item);
  node.title = item.url;
  node.classList.toggle("pinned", item.pinned);
  node.classList.toggle("active", item.id === view.selectedId);
  node.dataset.loading = item.loading ? "true" : "false";
  parts.bar.style.width = item.loading ? `${Math.round(item.progress * 100)}%` : "0";
  parts.pin.textContent = item.pinned ? "Unpin" : "Pin";
  const opener = item.openerTabId && view.tabs.get(item.openerTabId);
  parts.opener.textContent = item.openerTabId ? `← ${opener ? tabTitle(opener.item) : item.openerTabId}` : "";
  parts.opener.title = item.openerTabId ? `opened by ${item.openerTabId}` : "";
  if (old.groupId !== item.groupId || !node.dataset.group) {
    if (old.groupId) view.dirtyGroups.add(old.groupId);
    if (item.groupId) view.dirtyGroups.add(item.groupId);
  }
  node.dataset.group = item.groupId || "";
  paintCard(entry);
  if (!item.groupId) {
    // Out of any group: no colour, no label.
    node.className = node.className.replace(/\bg-\w+\b/g, "").trim();
    node.classList.remove("collapsed");
    parts.group.hidden = true;
  }
  return entry;
}

function moveBy(id, delta) {
  const index = view.order.indexOf(id) + delta;
  if (index >= 0 && index < view.order.length) act(api("POST", `/v1/tabs/${id}/move`, { index }));
}

function placeNode(node, index) {
  const list = $("tabs");
  const before = view.order[index + 1] !== undefined ? view.tabs.get(view.order[index + 1])?.node : null;
  list.insertBefore(node, before || null);
}

function setSelected(id) {
  const before = view.selectedId && view.tabs.get(view.selectedId);
  view.selectedId = id;
  if (before) { before.node.classList.remove("active"); paintCard(before); }
  if (id && view.tabs.get(id)) { view.tabs.get(id).node.classList.add("active"); paintCard(view.tabs.get(id)); }
}

/** Draws each touched group's bracket: its colour on every member, its label on the first. */
function paintGroups() {
  for (const id of view.dirtyGroups) {
    const group = view.groups.get(id);
    const members = view.order.filter((tabId) => view.tabs.get(tabId)?.item.groupId === id);
    members.forEach((tabId, i) => {
      const { node, parts } = view.tabs.get(tabId);
      node.className = node.className.replace(/\bg-\w+\b/g, "").trim();
      if (group) node.classList.add(`g-${group.color}`);
      node.classList.toggle("collapsed", !!group?.collapsed);
      parts.group.hidden = i !== 0 || !group;
      if (i === 0 && group) {
        parts.group.className = `group-label bg-${group.color}`;
        parts.group.textContent = `${group.title || "group"}${group.collapsed ? " (collapsed)" : ""}`;
      }
    });
  }
  view.dirtyGroups.clear();
}

function populateTabs(items, selectedId) {
  for (const entry of view.tabs.values()) dropCard(entry);
  view.tabs.clear();
  view.order = items.map((item) => item.id);
  view.selectedId = selectedId;
  const nodes = items.map((item) => renderTab(item).node);
  $("tabs").replaceChildren(...nodes);
  for (const item of items) renderTab(item); // openers now resolve
  for (const id of view.groups.keys()) view.dirtyGroups.add(id);
  paintGroups();
  paintGrid();
}

function populateGroups(groups) {
  view.groups = new Map(groups.map((g) => [g.id, g]));
  for (const id of view.groups.keys()) view.dirtyGroups.add(id);
  paintGroups();
}

function renderTree(node) {
  view.tree = node;
  const draw = (n) => el("li", {},
    el("span", { class: "kind" }, n.kind), " ",
    el("span", {}, Object.entries(n.params).map(([k, v]) => `${k}=${v}`).join(" ")), " ",
    el("span", { class: "nav" }, n.navigator.length ? `[${n.navigator.join(", ")}]` : ""),
    n.children.length ? el("ul", {}, ...n.children.map(draw)) : "");
  $("tree").replaceChildren(node ? el("ul", {}, draw(node)) : "");
}

function findNode(node, id) {
  if (!node) return null;
  if (node.id === id) return node;
  for (const child of node.children) {
    const found = findNode(child, id);
    if (found) return found;
  }
  return null;
}

function removeNode(node, id) {
  if (!node) return;
  node.children = node.children.filter((child) => child.id !== id);
  node.children.forEach((child) => removeNode(child, id));
}

function addAction(action) {
  const list = $("actions");
  const duration = action.durationMicroseconds >= 1000 ? `${(action.durationMicroseconds / 1000).toFixed(1)} ms` : `${action.durationMicroseconds} µs`;
  const args = Object.entries(action.arguments).map(([k, v]) => `${k}=${v}`).join(" ");
  const item = el("li", { class: action.result === "ok" ? "ok" : "error", value: action.seq },
    `${action.time.slice(11, 23)} ${action.name} ${args} → ${action.result} (${duration})`);
  list.prepend(item);
  while (list.children.length > 100) list.lastChild.remove();
}

function renderToolbar(state) {
  $("toolbar").textContent = `${state.tabCount} tabs · back ${state.canGoBack ? "yes" : "no"} · forward ${state.canGoForward ? "yes" : "no"} · ` +
    (state.loading ? `loading ${Math.round(state.progress * 100)}%` : "idle") + (state.incognito ? " · incognito" : "");
}

function openWindow(id) {
  if (view.stream) view.stream.close();
  $("empty").hidden = true;
  $("window-view").hidden = false;
  $("window-title").textContent = `Window ${id}`;
  $("actions").replaceChildren();
  for (const entry of view.tabs.values()) dropCard(entry);
  view.tabs.clear();
  view.order = [];
  view.groups = new Map();
  let batch = 0;
  // The grid follows the order only when it changed (a title or a snapshot changes one card in place).
  const frame = () => { if (batch === 0) { paintGroups(); if (view.gridDirty) paintGrid(); } };
  const reorder = (fn) => tabEvent((data) => { view.gridDirty = true; fn(data); });
  const tabEvent = (fn) => (data) => { fn(data); frame(); };
  view.stream = new Stream(`/v1/browsers/${encodeURIComponent(id)}/events`, {
    "tabs.populate": (data) => populateTabs(data.items, data.selectedId),
    "tabs.insert": reorder((data) => {
      view.order.splice(data.index, 0, data.item.id);
      placeNode(renderTab(data.item).node, data.index);
      setSelected(data.selectedId);
    }),
    "tabs.remove": reorder((data) => {
      const entry = view.tabs.get(data.tabId);
      if (entry) { entry.node.remove(); dropCard(entry); view.tabs.delete(data.tabId); }
      view.order = view.order.filter((t) => t !== data.tabId);
      if (entry?.item.groupId) view.dirtyGroups.add(entry.item.groupId);
      setSelected(data.selectedId);
    }),
    "tabs.move": reorder((data) => {
      view.order = view.order.filter((t) => t !== data.tabId);
      view.order.splice(data.index, 0, data.tabId);
      const entry = view.tabs.get(data.tabId);
      if (entry) { placeNode(entry.node, data.index); if (entry.item.groupId) view.dirtyGroups.add(entry.item.groupId); }
    }),
    "tabs.replace": reorder((data) => {
      const index = view.order.indexOf(data.oldTabId);
      const old = view.tabs.get(data.oldTabId);
      const wasSelected = view.selectedId === data.oldTabId;
      if (old) { old.node.remove(); dropCard(old); view.tabs.delete(data.oldTabId); }
      if (index >= 0) view.order[index] = data.item.id;
      placeNode(renderTab(data.item).node, index);
      if (wasSelected) setSelected(data.item.id);
    }),
    "tabs.select": (data) => setSelected(data.tabId),
    "tabs.update": tabEvent((data) => renderTab(data.item)),
    "tabs.snapshot": (data) => {
      const entry = view.tabs.get(data.tabId);
      if (entry) { entry.item = { ...entry.item, snapshot: data.snapshot }; paintCard(entry); }
    },
    "groups.populate": (data) => populateGroups(data.groups),
    "groups.create": tabEvent((data) => { view.groups.set(data.group.id, data.group); view.dirtyGroups.add(data.group.id); }),
    "groups.update": tabEvent((data) => { view.groups.set(data.group.id, data.group); view.dirtyGroups.add(data.group.id); }),
    "groups.move": reorder((data) => {
      // The group's tabs moved as one block to its new start.
      view.groups.set(data.group.id, data.group);
      const members = view.order.filter((t) => view.tabs.get(t)?.item.groupId === data.group.id);
      view.order = view.order.filter((t) => !members.includes(t));
      view.order.splice(data.group.start, 0, ...members);
      members.forEach((t, i) => placeNode(view.tabs.get(t).node, data.group.start + i));
      view.dirtyGroups.add(data.group.id);
    }),
    "groups.delete": tabEvent((data) => { view.groups.delete(data.groupId); view.dirtyGroups.add(data.groupId); }),
    "groups.membership": tabEvent((data) => {
      const entry = view.tabs.get(data.tabId);
      if (entry) renderTab({ ...entry.item, groupId: data.groupId });
      if (data.previousGroupId) view.dirtyGroups.add(data.previousGroupId);
      if (data.groupId) view.dirtyGroups.add(data.groupId);
    }),
    "toolbar.update": renderToolbar,
    "location.update": () => {},
    "ui.tree": (data) => renderTree(data.tree),
    "ui.presented": (data) => { findNode(view.tree, data.parentId)?.children.push(data.node); renderTree(view.tree); },
    "ui.pushed": (data) => { findNode(view.tree, data.parentId)?.children.push(data.node); renderTree(view.tree); },
    "ui.dismissed": (data) => { removeNode(view.tree, data.nodeId); renderTree(view.tree); },
    "ui.popped": (data) => { removeNode(view.tree, data.nodeId); renderTree(view.tree); },
    "ui.changed": (data) => {
      const node = findNode(view.tree, data.node.id);
      if (node) Object.assign(node, data.node);
      renderTree(view.tree);
    },
    "actions.append": (data) => addAction(data.action),
    "batch.begin": () => { batch += 1; },
    "batch.end": () => { batch = Math.max(0, batch - 1); frame(); },
    "browser.closed": () => {
      view.stream.close();
      $("window-title").textContent = `Window ${id} (closed)`;
    },
    reset: (data) => {
      // Kept apart from the connection status, which every stream's reconnection updates.
      $("notice").textContent = `reset (${data.reason}) at ${new Date().toLocaleTimeString()}: showing the current state`;
      populateGroups(data.groups);
      populateTabs(data.tabs.items, data.tabs.selectedId);
      renderToolbar(data.toolbar);
      renderTree(data.ui || null);
    },
  }, (state) => setStatus(state === "up" ? "live" : "reconnecting…", state !== "up"));
  act(api("GET", `/v1/browsers/${encodeURIComponent(id)}/actions?limit=1000`).then((list) => {
    for (const action of list.items.slice(-100)) addAction(action);
  }));
}

$("new-tab").addEventListener("submit", (event) => {
  event.preventDefault();
  if (selected) act(api("POST", `/v1/browsers/${selected}/tabs`, { url: $("new-url").value }));
});
$("route").addEventListener("submit", (event) => {
  event.preventDefault();
  if (selected) act(api("POST", `/v1/browsers/${selected}/route`, { url: $("route-url").value }));
});
$("undo-close").addEventListener("click", () => {
  if (selected) act(api("POST", `/v1/browsers/${selected}/restore-closed-tab`, {}));
});

// A page left for another keeps no stream open (a browser may keep it in its back/forward cache,
// and streams held there would use up the few connections a browser opens to one server); coming
// back to it reloads it.
window.addEventListener("pagehide", () => {
  if (directory) directory.close();
  for (const entry of profiles.values()) entry.stream.close();
  if (view.stream) view.stream.close();
});
window.addEventListener("pageshow", (event) => { if (event.persisted) location.reload(); });

// ---- start ---------------------------------------------------------------------------------------------

async function start() {
  if (auth.token) $("forget").hidden = false;
  watchRendering();
  try {
    if (auth.token) {
      // The directory stream is the administrator's: a profile token (403) lists its own profiles.
      const probe = await fetch("/v1/stream-tickets", {
        method: "POST", headers: { Authorization: `Bearer ${auth.token}`, "Content-Type": "application/json" },
        body: JSON.stringify({ path: "/v1/events" }),
      });
      if (probe.status === 403) {
        await loadProfiles();
        setStatus("live");
        return;
      }
    }
    directory = new Stream("/v1/events", {
      "profiles.populate": (data) => setProfiles(data.items),
      "profiles.add": (data) => addProfile(data.profile),
      "profiles.update": (data) => addProfile(data.profile),
      "profiles.remove": (data) => removeProfile(data.profileId),
      reset: (data) => setProfiles(data.items),
    }, (state) => setStatus(state === "up" ? "live" : "reconnecting…", state !== "up"));
  } catch (error) {
    if (!auth.required) showError(error.message);
  }
}

(async () => {
  // Is a token needed? An unauthenticated read says.
  const probe = await fetch("/v1/profiles?limit=1", auth.token ? { headers: { Authorization: `Bearer ${auth.token}` } } : {});
  if (probe.status === 401) {
    if (auth.token) sessionStorage.removeItem("browserd.token");
    auth.token = null;
    askForToken();
    return;
  }
  start();
})();

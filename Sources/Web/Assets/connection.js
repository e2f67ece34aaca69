// The page's one WebSocket: a snapshot of everything, then coalesced updates, the bridge's
// counters, the log tail and the answers to our commands. Reconnects by itself with backoff.

/** Everything the bridge published that the page shows. */
export const store = {
  /** "living_room_tv/media" → document (object, or a string such as "online"). */
  documents: new Map(),
  /** device topic (or "bridge") → [{kind, version, document}], oldest first. */
  recent: new Map(),
  logs: [],
  stats: null,
  meta: null,
  live: false,
};

const RECENT = 25;
const LOGS = 500;
const listeners = new Set();
const pending = new Map();
let socket = null;
let attempt = 0;
let nextRef = 1;

/** `listener(changes)`: changes = {devices: Set<topic>, bridge, logs, stats, all, connection}. */
export function subscribe(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function emit(changes) {
  for (const listener of [...listeners]) {
    try { listener(changes); } catch (error) { console.warn("page update failed", error); }
  }
}

function changeSet() {
  return { devices: new Set(), bridge: false, logs: false, stats: false, all: false, connection: false };
}

function setDocument(key, value, changes) {
  if (value === null || value === undefined) store.documents.delete(key);
  else store.documents.set(key, value);
  const device = key.slice(0, key.indexOf("/"));
  if (device === "bridge") changes.bridge = true;
  else changes.devices.add(device);
}

function addRecent(item, changes) {
  const list = store.recent.get(item.device) || [];
  list.push({ kind: item.kind, version: item.version, document: item.document });
  if (list.length > RECENT) list.splice(0, list.length - RECENT);
  store.recent.set(item.device, list);
  if (item.device === "bridge") changes.bridge = true;
  else changes.devices.add(item.device);
}

function handle(message) {
  const changes = changeSet();
  switch (message.type) {
    case "snapshot":
      store.documents.clear();
      store.recent.clear();
      store.meta = message.meta;
      for (const [key, value] of Object.entries(message.documents)) setDocument(key, value, changes);
      for (const item of message.recent) addRecent(item, changes);
      changes.all = true;
      break;
    case "update":
      for (const [key, value] of Object.entries(message.documents)) setDocument(key, value, changes);
      for (const item of message.recent) addRecent(item, changes);
      for (const answer of message.responses) settle(answer);
      break;
    case "log":
      store.logs.push(...message.lines);
      if (store.logs.length > LOGS) store.logs.splice(0, store.logs.length - LOGS);
      changes.logs = true;
      break;
    case "stats":
      store.stats = message;
      changes.stats = true;
      break;
    default:
      return;
  }
  emit(changes);
}

function settle(answer) {
  const waiter = pending.get(answer.ref);
  if (!waiter) return;
  pending.delete(answer.ref);
  clearTimeout(waiter.timer);
  waiter.resolve(answer.response);
}

function setLive(live) {
  store.live = live;
  const badge = document.getElementById("connection");
  badge.dataset.state = live ? "live" : attempt > 1 ? "offline" : "connecting";
  badge.textContent = live ? "Live" : attempt > 1 ? "Reconnecting…" : "Connecting…";
  const changes = changeSet();
  changes.connection = true;
  emit(changes);
}

/** Opens the WebSocket (again after a close, with backoff up to 10 s). */
export function connect() {
  if (socket) return;
  attempt += 1;
  const url = new URL("ws", document.baseURI);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(url);
  socket = ws;
  ws.addEventListener("open", () => { attempt = 0; setLive(true); });
  ws.addEventListener("message", (event) => {
    try { handle(JSON.parse(event.data)); } catch (error) { console.warn("bad message from the bridge", error); }
  });
  ws.addEventListener("close", () => {
    socket = null;
    for (const [ref, waiter] of pending) {
      clearTimeout(waiter.timer);
      waiter.resolve({ status: "error", error: { code: "disconnected", message: "the connection to the bridge was lost; the command may or may not have run" } });
      pending.delete(ref);
    }
    setLive(false);
    // Refused twice: maybe the session is gone (a new token); the page then asks for it again.
    if (attempt >= 2) {
      fetch("api/session", { cache: "no-store" }).then((r) => (r.ok ? r.json() : null))
        .then((s) => { if (s?.auth_required && !s.authenticated) location.reload(); }).catch(() => {});
    }
    setTimeout(connect, Math.min(10000, 500 * 2 ** Math.min(attempt, 5)));
  });
}

/**
 * Sends a command (device set) or a bridge request; resolves with the bridge's response
 * document ({command, id, status, data | error}).
 */
export function command(device, name, body = {}) {
  return new Promise((resolve) => {
    if (!socket || socket.readyState !== WebSocket.OPEN) {
      resolve({ status: "error", error: { code: "disconnected", message: "not connected to the bridge" } });
      return;
    }
    const ref = `c${nextRef++}`;
    const timer = setTimeout(() => {
      pending.delete(ref);
      resolve({ status: "error", error: { code: "timeout", message: "no answer from the bridge within 30 s" } });
    }, 30000);
    pending.set(ref, { resolve, timer });
    const message = { type: "command", ref, command: name, body };
    if (device === null) message.bridge = true;
    else message.device = device;
    socket.send(JSON.stringify(message));
  });
}

/** The documents of one device: {info, availability, receiver, media, state, members, keep}. */
export function device(topic) {
  const get = (leaf) => store.documents.get(`${topic}/${leaf}`) ?? null;
  return {
    topic,
    info: get("info"), availability: get("availability"), receiver: get("receiver"),
    media: get("media"), state: get("state"), members: get("members"), keep: get("keep"),
    recent: store.recent.get(topic) || [],
  };
}

/** Topics of every device the page knows (from `bridge/devices` and the device documents). */
export function deviceTopics() {
  const topics = new Set();
  const list = store.documents.get("bridge/devices");
  if (Array.isArray(list)) for (const d of list) if (typeof d?.topic === "string") topics.add(d.topic);
  for (const key of store.documents.keys()) {
    const slash = key.indexOf("/");
    const topic = key.slice(0, slash);
    if (topic !== "bridge" && key.endsWith("/info")) topics.add(topic);
  }
  return topics;
}

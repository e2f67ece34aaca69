// One device: what plays (with every control), the queue, "cast a URL" (load, announce),
// everything info/receiver/media say, the recent events and command responses.
import { Controls } from "./controls.js";
import { command, device } from "./connection.js";
import { displayName, drawNowPlaying, keepText, status } from "./devices.js";
import { el, icon, replace, setText, showResponse, timeOfDay } from "./util.js";

function facts(pairs) {
  return el("dl", { class: "facts" }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== "")
    .map(([k, v]) => [el("dt", {}, k), el("dd", {}, typeof v === "object" ? JSON.stringify(v) : String(v))]));
}

function yesNo(value) { return value === true ? "yes" : value === false ? "no" : null; }

export class DevicePage {
  constructor(topic) {
    this.topic = topic;
    this.controls = new Controls(topic);
    this.name = el("span", { dataset: { role: "name" } });
    this.pill = el("span", { class: "pill", dataset: { role: "status" } });
    this.art = el("div", { class: "art" });
    this.app = el("span", { class: "app" });
    this.title = el("span", { class: "title", dataset: { role: "title" } });
    this.artist = el("span", { class: "artist", dataset: { role: "artist" } });
    this.slot = el("div", { class: "slot", dataset: { role: "extras" } });
    this.queue = el("ol", { class: "queue", dataset: { role: "queue" } });
    this.mediaFacts = el("div");
    this.receiverFacts = el("div");
    this.infoFacts = el("div");
    this.keepFacts = el("div", { dataset: { role: "keep" } });
    this.events = el("ul", { class: "log-list", dataset: { role: "events" } });
    this.responses = el("ul", { class: "log-list", dataset: { role: "responses" } });
    this.root = el("section", { dataset: { device: topic } },
      el("h1", {}, el("a", { href: "./", "data-link": true, class: "icon-button", title: "All devices", "aria-label": "All devices" }, icon("back")),
        this.name, this.pill),
      el("div", { class: "page-grid" },
        el("div", {},
          el("div", { class: "panel" }, el("div", { class: "hero" }, this.art, el("div", { class: "meta" }, this.app, this.title, this.artist, this.slot)),
            this.controls.root),
          el("div", { class: "panel" }, el("h2", {}, "Cast a URL"), this.castForm()),
          el("div", { class: "panel" }, el("h2", {}, "Queue"), this.queue),
          el("div", { class: "panel" }, el("h2", {}, "Media"), this.mediaFacts),
          el("div", { class: "panel" }, el("h2", {}, "Receiver"), this.receiverFacts)),
        el("div", {},
          el("div", { class: "panel" }, el("h2", {}, "Device"), this.infoFacts, this.traceSwitch(),
            el("div", { class: "actions" }, el("button", { type: "button", class: "button", onclick: () => this.simple("refresh") }, "Refresh"),
              el("button", { type: "button", class: "button", onclick: () => this.simple("quit") }, "Quit app"))),
          el("div", { class: "panel" }, el("h2", {}, "Kept page"), this.keepFacts),
          el("div", { class: "panel" }, el("h2", {}, "Command responses"), this.responses),
          el("div", { class: "panel" }, el("h2", {}, "Recent events"), this.events))));
    this.imageURL = undefined;
    this.update();
  }

  castForm() {
    const url = el("input", { type: "url", name: "url", required: true, placeholder: "https://example.com/song.mp3", "aria-label": "Media URL" });
    const title = el("input", { type: "text", name: "title", placeholder: "Title (optional)", "aria-label": "Title" });
    const volume = el("input", { type: "text", name: "volume", inputmode: "numeric", placeholder: "Announce volume % (optional)",
      "aria-label": "Announcement volume in percent" });
    const send = async (name) => {
      if (!url.reportValidity()) return;
      const body = { url: url.value.trim() };
      if (title.value.trim()) body.title = title.value.trim();
      if (name === "announce" && volume.value.trim()) body.volume = Number(volume.value) / 100;
      const response = await command(this.topic, name, body);
      showResponse(`${displayName(device(this.topic))} · ${name}`, response, false);
    };
    return el("form", { class: "cast", dataset: { role: "cast" }, onsubmit: (e) => { e.preventDefault(); send("load"); } },
      url, el("div", { class: "row" }, title, volume),
      el("div", { class: "actions" }, el("button", { type: "submit", class: "button primary", dataset: { command: "load" } }, "Play now"),
        el("button", { type: "button", class: "button", dataset: { command: "announce" }, onclick: () => send("announce") }, "Announce")));
  }

  /** The device's Cast traffic at trace level in the bridge's log (`bridge/request/log_level`). */
  traceSwitch() {
    // Clicks so far, and whether one is being answered: a reading of the levels asked before a
    // click (the page reads them again at every reconnect) is not shown over it.
    this.traceChanges = 0;
    this.traceSetting = false;
    this.trace = el("input", { type: "checkbox", disabled: true, dataset: { role: "trace" }, onchange: () => this.setTrace() });
    return el("label", { class: "switch", title: "Logs every Cast message of this device, with its payload (secrets masked), at trace level" },
      this.trace, "Trace this device's Cast traffic");
  }

  /** Reads whether the bridge traces this device (once the page is connected). */
  async loadTrace() {
    const asked = this.traceChanges;
    const response = await command(null, "log_level", {});
    // A click since (or its answer on the way) is newer than this reading: it must not undo it.
    if (response.status === "ok" && asked === this.traceChanges && !this.traceSetting) this.showTrace(response);
  }

  async setTrace() {
    const on = this.trace.checked;
    this.traceChanges += 1;
    this.traceSetting = true;
    this.trace.disabled = true;
    let response;
    try {
      response = await command(null, "log_level", on ? { device: this.topic } : { device: this.topic, level: "default" });
    } finally {
      this.traceSetting = false;
    }
    if (response.status === "ok") this.showTrace(response);
    else {
      this.trace.checked = !on;
      this.trace.disabled = false;
      showResponse(`${displayName(device(this.topic))} · trace logging`, response, false);
    }
  }

  showTrace(response) {
    const traced = Array.isArray(response.data?.devices) ? response.data.devices : [];
    this.trace.checked = traced.includes(this.topic);
    this.trace.disabled = false;
  }

  async simple(name, body = {}) {
    const response = await command(this.topic, name, body);
    showResponse(`${displayName(device(this.topic))} · ${name}`, response, false);
  }

  changed(changes) {
    if (changes.all || changes.devices.has(this.topic)) this.update();
    if (changes.connection || changes.all) this.loadTrace();
  }

  update() {
    const dev = device(this.topic);
    this.dev = dev;
    document.title = `${displayName(dev)} · cast2mqtt`;
    setText(this.name, displayName(dev));
    const state = status(dev);
    setText(this.pill, dev.info ? state : "unknown device");
    this.pill.dataset.state = state;
    drawNowPlaying(this, dev, state);
    this.controls.update(dev);
    this.updateQueue(dev.media);
    const m = typeof dev.media === "object" && dev.media ? dev.media : {};
    replace(this.mediaFacts, facts([["State", m.state], ["Idle reason", m.idle_reason], ["Content", m.content_id],
      ["Type", m.content_type], ["Stream", m.stream_type], ["Duration", m.duration], ["Rate", m.playback_rate],
      ["Album", m.album], ["Metadata", m.metadata_type], ["Session", m.media_session_id],
      ["Video", m.video_info ? `${m.video_info.width}×${m.video_info.height} ${m.video_info.hdr_type || ""}` : null],
      ["Tracks", Array.isArray(m.tracks) && m.tracks.length ? m.tracks.map((t) => `${t.id}: ${t.type} ${t.language || ""}`).join(", ") : null],
      ["Ad break", m.break_status ? JSON.stringify(m.break_status) : null],
      ["Supports", Array.isArray(m.supported_commands) ? m.supported_commands.join(", ") : null], ["Updated", m.updated_at && timeOfDay(m.updated_at)]]));
    const r = dev.receiver || {};
    replace(this.receiverFacts, facts([["App", r.app_name], ["App id", r.app_id], ["Session", r.session_id], ["Status", r.status_text],
      ["Idle screen", yesNo(r.idle_screen)], ["Standby", yesNo(r.standby)], ["Active input", yesNo(r.active_input)],
      ["Volume", r.volume ? `${Math.round((r.volume.level || 0) * 100)}%${r.volume.muted ? " (muted)" : ""} · ${r.volume.control_type || ""}` : null],
      ["Namespaces", Array.isArray(r.namespaces) ? r.namespaces.join(", ") : null], ["Updated", r.updated_at && timeOfDay(r.updated_at)]]));
    const i = dev.info || {};
    replace(this.infoFacts, facts([["Name", i.name], ["Topic", this.topic], ["Model", i.model], ["Manufacturer", i.manufacturer],
      ["Type", i.cast_type], ["Address", i.address ? `${i.address}:${i.port}` : null], ["Id", i.id], ["Source", i.source],
      ["Capabilities", Array.isArray(i.capabilities) ? i.capabilities.join(", ") : null],
      ["Groups", Array.isArray(i.groups) && i.groups.length ? i.groups.map((g) => g.topic || g.id).join(", ") : null],
      ["Authenticated", authText(i)], ["Device certificate", certificateText(i.device_certificate)],
      ["Availability", i.offline_reason ? `${dev.availability} (${i.offline_reason})` : dev.availability]]));
    const k = dev.keep;
    replace(this.keepFacts, k && typeof k === "object"
      ? [el("p", { class: "keep-state" }, keepText(k)),
        facts([["App", k.app], ["App id", k.app_id], ["State", k.state], ["Reason", k.reason], ["Why", k.detail],
          ["Since", k.since && timeOfDay(k.since)], ["Launches", k.launches]]),
        el("div", { class: "actions" },
          el("button", { type: "button", class: "button", onclick: () => this.simple("keep", { keep: k.state === "off" }) },
            k.state === "off" ? "Keep on" : "Keep off"))]
      : el("p", { class: "count" }, "No page is kept on this display (command/keep, docs/displays.md)"));
    this.updateRecent(dev.recent);
  }

  updateQueue(media) {
    const items = Array.isArray(media?.queue?.items) ? media.queue.items : [];
    const current = media?.queue?.current_item_id;
    if (!items.length) { replace(this.queue, el("li", {}, el("span", { class: "count" }, "No queue"))); return; }
    // Another item: a click plays it (`queue` {"jump": item_id}).
    replace(this.queue, items.map((item) => el("li", { class: item.item_id === current ? "current" : "", dataset: { item: String(item.item_id) } },
      el("span", {}, [item.title || item.content_id || `Item ${item.item_id}`, item.artist ? ` · ${item.artist}` : ""].join("")),
      item.item_id === current ? el("span", { class: "count" }, "playing")
        : el("button", { type: "button", class: "icon-button", title: "Play this item", "aria-label": "Play this item",
          dataset: { command: "jump" }, onclick: () => this.jump(item.item_id) }, icon("play")))));
  }

  async jump(itemId) {
    const response = await command(this.topic, "queue", { jump: itemId });
    showResponse(`${displayName(device(this.topic))} · play item`, response, false);
  }

  updateRecent(recent) {
    const row = (item) => {
      const d = item.document || {};
      const error = d.status === "error" || d.type === "error" || d.type === "load_failed";
      const what = item.kind === "response" ? `${d.command || "?"} → ${d.status || "?"}` : d.type || "event";
      const detail = item.kind === "response" ? (d.error ? `${d.error.code}: ${d.error.message}` : d.id !== undefined ? `id ${d.id}` : "")
        : Object.entries(d).filter(([k]) => !["type", "at", "device"].includes(k)).map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`).join(", ");
      return el("li", { class: error ? "error" : "", dataset: { kind: item.kind } },
        el("span", { class: "when" }, d.at ? timeOfDay(d.at) : ""), el("span", { class: "what" }, what),
        detail ? el("span", { class: "detail" }, detail) : null);
    };
    const responses = recent.filter((i) => i.kind === "response").reverse();
    const events = recent.filter((i) => i.kind === "event").reverse();
    replace(this.responses, responses.length ? responses.map(row) : el("li", {}, el("span", { class: "count" }, "None yet")));
    replace(this.events, events.length ? events.map(row) : el("li", {}, el("span", { class: "count" }, "None yet")));
  }

  tick(now) { if (this.dev?.media?.state === "playing") this.controls.tick(now); }

  destroy() {}
}

// Device authentication (docs/security.md): "yes", "no (<why>)", or nothing when not checked.
function authText(info) {
  if (info.authenticated === true) return "yes";
  if (info.authenticated === false) return `no (${info.auth_error || "failed"})`;
  return null;
}

function certificateText(cert) {
  if (!cert || typeof cert !== "object") return null;
  const name = [cert.common_name, cert.organization].filter((x) => typeof x === "string" && x).join(" · ");
  const sha = typeof cert.sha256 === "string" ? cert.sha256.slice(0, 16) : "";
  return name ? `${name} (${sha}…)` : sha || null;
}

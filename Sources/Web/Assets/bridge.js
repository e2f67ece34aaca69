// The Bridge page: MQTT connection, uptime, version, counts, overload counters, the effective
// configuration (secrets masked by the bridge) and the log tail, live.
import { command, store } from "./connection.js";
import { duration, el, setText, showResponse } from "./util.js";

function stat(label, role) {
  const value = el("div", { class: "value", dataset: { role } }, "–");
  return { node: el("div", { class: "stat" }, el("div", { class: "label" }, label), value), value };
}

export class BridgePage {
  constructor() {
    this.stats = {
      mqtt: stat("MQTT", "mqtt"), health: stat("Health", "health"), uptime: stat("Uptime", "uptime"),
      version: stat("Version", "version"), devices: stat("Devices", "devices"), online: stat("Online", "online"),
      queue: stat("Input queue", "queue"), waiting: stat("Waiting commands", "waiting"), inflight: stat("Cast requests in flight", "in-flight"),
      coalesced: stat("Coalesced statuses", "coalesced"), overloaded: stat("Commands answered busy (overload)", "overloaded"),
      dropped: stat("Dropped app messages", "dropped"), pages: stat("Open pages", "pages"),
    };
    this.config = el("pre", { dataset: { role: "configuration" } });
    this.logs = el("pre", { class: "logs", dataset: { role: "logs" }, "aria-live": "off" });
    this.filter = el("input", { type: "search", placeholder: "Filter the log", "aria-label": "Filter the log", oninput: () => this.renderLogs(true) });
    this.follow = el("input", { type: "checkbox", checked: true, "aria-label": "Follow the log" });
    const action = (label, name, body = {}) => el("button", { type: "button", class: "button", onclick: async () => {
      const response = await command(null, name, body);
      showResponse(`Bridge · ${name}`, response, false);
    } }, label);
    this.root = el("section", {},
      el("h1", {}, "Bridge"),
      el("div", { class: "actions" }, action("Refresh every device", "refresh"), action("Health check", "health_check")),
      el("div", { class: "stats" }, Object.values(this.stats).map((s) => s.node)),
      el("div", { class: "page-grid" },
        el("div", { class: "panel" }, el("h2", {}, "Log"),
          el("div", { class: "toolbar" }, this.filter, el("label", { class: "switch" }, this.follow, "Follow")), this.logs),
        el("div", { class: "panel" }, el("h2", {}, "Configuration"), this.config)));
    this.renderAll();
    this.timer = setInterval(() => this.renderUptime(), 1000);
  }

  changed(changes) {
    if (changes.all || changes.bridge || changes.stats || changes.connection) this.renderAll();
    if (changes.logs || changes.all) this.renderLogs(false);
  }

  renderAll() {
    const info = store.documents.get("bridge/info") || {};
    const bridgeState = store.documents.get("bridge/state");
    const s = store.stats?.bridge || {};
    const connected = store.stats ? s.mqtt_connected : null;
    setText(this.stats.mqtt.value, connected === null ? "–" : connected ? "connected" : "disconnected");
    this.stats.mqtt.value.className = `value ${connected === null ? "" : connected ? "ok" : "bad"}`;
    const healthy = store.stats?.healthy;
    setText(this.stats.health.value, healthy === undefined ? "–" : healthy ? "healthy" : "unhealthy");
    this.stats.health.value.className = `value ${healthy === undefined ? "" : healthy ? "ok" : "bad"}`;
    setText(this.stats.version.value, info.version || store.meta?.version || "–");
    setText(this.stats.devices.value, s.devices ?? info.devices ?? "–");
    setText(this.stats.online.value, s.online ?? info.online ?? "–");
    setText(this.stats.queue.value, s.input_queue_depth ?? "–");
    setText(this.stats.waiting.value, s.waiting ?? "–");
    setText(this.stats.inflight.value, s.in_flight ?? "–");
    setText(this.stats.coalesced.value, s.overload?.coalesced_statuses ?? "–");
    setText(this.stats.overloaded.value, s.overload?.overloaded_commands ?? "–");
    setText(this.stats.dropped.value, s.overload?.dropped_app_messages ?? "–");
    setText(this.stats.pages.value, store.stats?.web_clients ?? "–");
    setText(this.config, store.meta ? `# ${bridgeState === "online" ? "online" : "state: " + (bridgeState || "unknown")}, base topic ${store.meta.base_topic}\n${store.meta.configuration}` : "");
    this.renderUptime();
  }

  renderUptime() {
    const started = Date.parse(store.documents.get("bridge/info")?.started_at || "");
    setText(this.stats.uptime.value, Number.isFinite(started) ? duration((Date.now() - started) / 1000) : "–");
  }

  renderLogs(force) {
    const q = this.filter.value.trim().toLowerCase();
    const lines = q ? store.logs.filter((l) => l.toLowerCase().includes(q)) : store.logs;
    const text = lines.slice(-500).join("\n");
    if (!force && this.logs.textContent === text) return;
    this.logs.textContent = text;
    if (this.follow.checked) this.logs.scrollTop = this.logs.scrollHeight;
  }

  tick() {}

  destroy() { clearInterval(this.timer); }
}



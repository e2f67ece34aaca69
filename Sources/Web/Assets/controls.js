// Playback controls of one device: progress, play/pause, stop, previous/next, rate, volume and
// mute. Used by the device cards and the device page; every button sends a command through the
// bridge and shows its error, if any.
import { command } from "./connection.js";
import { clock, el, icon, livePosition, setText, showResponse } from "./util.js";

const RATES = [0.5, 0.75, 1, 1.25, 1.5, 2];
const ACTIVE = new Set(["playing", "paused", "buffering"]);

export class Controls {
  constructor(topic, { label = topic } = {}) {
    this.topic = topic;
    this.label = label;
    this.dev = null;
    this.elapsed = el("span", { dataset: { role: "elapsed" } }, "–:––");
    this.fill = el("div");
    this.total = el("span", { dataset: { role: "duration" } }, "–:––");
    this.progress = el("div", { class: "progress" }, this.elapsed, el("div", { class: "bar" }, this.fill), this.total);
    this.previous = this.button("previous", "Previous", () => this.send("previous"));
    this.toggle = this.button("play", "Play", () => this.send(this.playing ? "pause" : "play", {}, this.toggle), true);
    this.stop = this.button("stop", "Stop", () => this.send("stop"));
    this.next = this.button("next", "Next", () => this.send("next"));
    this.rate = el("select", { class: "rate", title: "Playback rate", "aria-label": "Playback rate", dataset: { command: "rate" },
      onchange: () => this.send("rate", { rate: Number(this.rate.value) }) },
    RATES.map((r) => el("option", { value: String(r) }, `${r}×`)));
    this.mute = this.button("mute", "Mute", () => this.send("mute", { muted: !this.muted }), false, "volume");
    this.slider = el("input", { type: "range", min: "0", max: "100", step: "1", value: "0", "aria-label": "Volume",
      dataset: { command: "volume" } });
    this.level = el("span", { class: "level" }, "");
    this.slider.addEventListener("input", () => { this.dragging = true; setText(this.level, `${this.slider.value}%`); });
    this.slider.addEventListener("change", () => {
      this.dragging = false;
      this.send("volume", { level: Number(this.slider.value) / 100 });
    });
    this.root = el("div", { class: "player" },
      this.progress,
      el("div", { class: "controls" }, this.previous, this.toggle, this.stop, this.next, this.rate,
        el("div", { class: "volume" }, this.mute, this.slider, this.level)));
  }

  button(name, title, action, primary = false, iconName = name) {
    return el("button", { type: "button", class: `icon-button${primary ? " primary" : ""}`, title, "aria-label": title,
      dataset: { command: name }, onclick: action }, icon(iconName));
  }

  async send(name, body = {}, button = null) {
    const target = button || this.root.querySelector(`[data-command="${name}"]`);
    target?.classList.add("busy");
    const response = await command(this.topic, name, body);
    target?.classList.remove("busy");
    showResponse(`${this.label} · ${name}`, response);
    return response;
  }

  get playing() {
    const state = this.dev?.media?.state;
    return state === "playing" || state === "buffering";
  }

  get muted() { return Boolean(this.dev?.receiver?.volume?.muted); }

  update(dev) {
    this.dev = dev;
    const online = dev.availability === "online";
    const media = typeof dev.media === "object" ? dev.media : null;
    const active = online && ACTIVE.has(media?.state);
    const supported = new Set(Array.isArray(media?.supported_commands) ? media.supported_commands : []);
    const playing = this.playing;
    this.toggle.replaceChildren(icon(playing ? "pause" : "play"));
    this.toggle.title = playing ? "Pause" : "Play";
    this.toggle.setAttribute("aria-label", this.toggle.title);
    this.toggle.dataset.command = playing ? "pause" : "play";
    this.toggle.disabled = !active;
    this.stop.disabled = !active;
    this.previous.disabled = !active || !supported.has("queue_prev");
    this.next.disabled = !active || !supported.has("queue_next");
    this.rate.disabled = !active || !supported.has("playback_rate");
    const rate = String(media?.playback_rate ?? 1);
    if (!this.rate.matches(":focus") && [...this.rate.options].some((o) => o.value === rate)) this.rate.value = rate;
    const volume = dev.receiver?.volume;
    const fixed = volume?.control_type === "fixed";
    this.slider.disabled = !online || !volume || fixed;
    this.mute.disabled = !online || !volume;
    this.mute.replaceChildren(icon(this.muted ? "muted" : "volume"));
    this.mute.title = this.muted ? "Unmute" : "Mute";
    this.mute.setAttribute("aria-label", this.mute.title);
    this.mute.setAttribute("aria-pressed", String(this.muted));
    if (!this.dragging && typeof volume?.level === "number") {
      const percent = Math.round(volume.level * 100);
      if (this.slider.value !== String(percent)) this.slider.value = String(percent);
      setText(this.level, `${percent}%`);
    } else if (!volume) {
      setText(this.level, "");
    }
    this.progress.hidden = !media || !ACTIVE.has(media.state);
    this.tick();
  }

  /** Moves the progress bar (called every half second while the device plays). */
  tick(now = Date.now()) {
    const media = typeof this.dev?.media === "object" ? this.dev.media : null;
    if (!media || this.progress.hidden) return;
    const position = livePosition(media, now);
    const total = typeof media.duration === "number" ? media.duration : null;
    setText(this.elapsed, clock(position));
    setText(this.total, total ? clock(total) : media.stream_type === "live" ? "live" : "–:––");
    const width = total && position !== null ? `${Math.min(100, (position / total) * 100).toFixed(2)}%` : "0%";
    if (this.fill.style.width !== width) this.fill.style.width = width;
  }
}

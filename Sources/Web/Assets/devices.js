// The Devices page: a card per device (type, name, online/offline, app, artwork, title and
// artist, live progress and every control), searchable, filterable and sorted. Cards that are
// off screen are brought up to date when they scroll into view.
import { Controls } from "./controls.js";
import { device, deviceTopics, store } from "./connection.js";
import { artwork, el, icon, setText } from "./util.js";

const ORDER = { playing: 0, buffering: 1, paused: 2, idle: 3, off: 4, offline: 5 };
const FILTERS = [["all", "All"], ["online", "Online"], ["playing", "Playing"], ["offline", "Offline"]];

/** What the pill says: offline, or the device's state word. */
export function status(dev) {
  if (dev.availability !== "online") return "offline";
  return typeof dev.state === "string" ? dev.state : "idle";
}

export function displayName(dev) {
  return dev.info?.name || dev.topic;
}

/** Title and second line of what plays, or what the app says. */
export function nowPlaying(dev) {
  const media = typeof dev.media === "object" && dev.media ? dev.media : {};
  const receiver = dev.receiver || {};
  const title = media.title || (media.state && media.state !== "off" && media.state !== "idle" ? media.content_id : null)
    || (receiver.app_name && !receiver.idle_screen && receiver.status_text !== receiver.app_name ? receiver.status_text : null) || "";
  const artist = media.artist || media.subtitle || media.album || media.series_title || "";
  return { title, artist, app: receiver.idle_screen ? "" : receiver.app_name || "" };
}

/** Group membership and subtitles, as far as the documents say (empty when they do not). */
/**
 * What plays, on a card or the device page: `view` has the `app`, `title`, `artist`, `slot` and
 * `art` elements and remembers the artwork it shows in `imageURL`; `imageAttributes` go on the
 * artwork's <img>.
 */
export function drawNowPlaying(view, dev, state, imageAttributes = {}) {
  const playing = nowPlaying(dev);
  setText(view.app, playing.app);
  setText(view.title, playing.title || (state === "offline" ? "Unavailable" : "Nothing playing"));
  setText(view.artist, playing.artist);
  setText(view.slot, extras(dev));
  const image = artwork(dev.media);
  if (image !== view.imageURL) {
    view.imageURL = image;
    view.art.replaceChildren(image ? el("img", { src: image, alt: "", ...imageAttributes }) : icon("music"));
  }
}

/** `<dev>/keep` in words: "Keep: showing", "Keep: yielding (YouTube is showing)". */
export function keepText(keep) {
  const state = String(keep.state).replace("_", " ");
  const why = keep.state !== "showing" && keep.state !== "off" ? keep.detail || keep.reason : null;
  return `Keep: ${state}${why ? ` (${why})` : ""}`;
}

export function extras(dev) {
  const parts = [];
  const media = typeof dev.media === "object" && dev.media ? dev.media : {};
  if (typeof media.playing_in === "string") parts.push(`Playing in ${media.playing_in}`);
  if (Array.isArray(dev.members) && dev.members.length) parts.push(`Group of ${dev.members.map((m) => m?.name || m?.topic || "?").join(", ")}`);
  // A page kept on the display (mqtt-api.md §13): its state, and why when it is not showing.
  if (typeof dev.keep?.state === "string") parts.push(keepText(dev.keep));
  // Several bridge instances: the one that owns the device.
  if (typeof dev.info?.owner === "string") parts.push(`Bridge: ${dev.info.owner}`);
  const tracks = Array.isArray(media.tracks) ? media.tracks : [];
  const active = new Set(Array.isArray(media.active_tracks) ? media.active_tracks : []);
  const subtitle = tracks.find((t) => t?.type === "text" && active.has(t.id));
  if (subtitle) parts.push(`Subtitles: ${subtitle.name || subtitle.language || "on"}`);
  return parts.join(" · ");
}

class Card {
  constructor(topic) {
    this.topic = topic;
    this.visible = false;
    this.dirty = true;
    this.link = el("a", { class: "name", href: `device/${encodeURIComponent(topic)}`, "data-link": true, dataset: { role: "name" } });
    this.typeIcon = el("span", { class: "type" });
    this.pill = el("span", { class: "pill", dataset: { role: "status" } });
    this.art = el("div", { class: "art" });
    this.app = el("span", { class: "app", dataset: { role: "app" } });
    this.title = el("span", { class: "title", dataset: { role: "title" } });
    this.artist = el("span", { class: "artist", dataset: { role: "artist" } });
    this.slot = el("div", { class: "slot", dataset: { role: "extras" } });
    this.controls = new Controls(topic);
    this.root = el("article", { class: "card", dataset: { device: topic } },
      el("div", { class: "card-head" }, this.typeIcon, this.link, this.pill),
      el("div", { class: "now" }, this.art, el("div", { class: "meta" }, this.app, this.title, this.artist)),
      this.slot, this.controls.root);
    this.imageURL = undefined;
    this.castType = undefined;
  }

  update() {
    const dev = device(this.topic);
    this.dev = dev;
    this.dirty = false;
    const name = displayName(dev);
    setText(this.link, name);
    this.controls.label = name;
    const type = dev.info?.cast_type || "video";
    if (type !== this.castType) {
      this.castType = type;
      this.typeIcon.replaceChildren(icon(type === "audio" ? "audio" : type === "group" ? "group" : "video", type));
    }
    const state = status(dev);
    setText(this.pill, state);
    this.pill.dataset.state = state;
    this.root.classList.toggle("offline", state === "offline");
    drawNowPlaying(this, dev, state, { loading: "lazy" });
    this.controls.update(dev);
  }
}

export class DevicesPage {
  constructor() {
    this.cards = new Map();
    this.query = localStorage.getItem("cast2mqtt.query") || "";
    this.filter = localStorage.getItem("cast2mqtt.filter") || "all";
    this.sort = localStorage.getItem("cast2mqtt.sort") || "name";
    this.grid = el("div", { class: "grid", dataset: { role: "devices" } });
    this.count = el("span", { class: "count", dataset: { role: "count" } });
    this.empty = el("p", { class: "empty" });
    this.observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        const card = this.cards.get(entry.target.dataset.device);
        if (!card) continue;
        card.visible = entry.isIntersecting;
        if (card.visible && card.dirty) card.update();
      }
    }, { rootMargin: "200px" });
    const search = el("input", { type: "search", placeholder: "Search devices, apps, titles", value: this.query,
      "aria-label": "Search devices", oninput: () => { this.query = search.value; this.save(); this.arrange(); } });
    const chips = FILTERS.map(([value, label]) => el("button", { type: "button", class: "chip", "aria-pressed": String(value === this.filter),
      dataset: { filter: value }, onclick: (event) => {
        this.filter = value;
        for (const chip of chips) chip.setAttribute("aria-pressed", String(chip === event.currentTarget));
        this.save();
        this.arrange();
      } }, label));
    const sort = el("select", { "aria-label": "Sort by", onchange: () => { this.sort = sort.value; this.save(); this.arrange(); } },
      el("option", { value: "name" }, "Name"), el("option", { value: "status" }, "Status"), el("option", { value: "type" }, "Type"));
    sort.value = this.sort;
    this.root = el("section", {}, el("h1", {}, "Devices"), el("div", { class: "toolbar" }, search, el("div", { class: "chips" }, chips), sort, this.count),
      this.grid, this.empty);
  }

  save() {
    localStorage.setItem("cast2mqtt.query", this.query);
    localStorage.setItem("cast2mqtt.filter", this.filter);
    localStorage.setItem("cast2mqtt.sort", this.sort);
  }

  changed(changes) {
    let membership = false;
    if (changes.all || changes.bridge) {
      const topics = deviceTopics();
      for (const topic of topics) if (!this.cards.has(topic)) { this.add(topic); membership = true; }
      for (const topic of [...this.cards.keys()]) if (!topics.has(topic)) { this.remove(topic); membership = true; }
    }
    const touched = changes.all ? [...this.cards.keys()] : [...changes.devices];
    for (const topic of touched) {
      let card = this.cards.get(topic);
      if (!card) {
        if (!store.documents.has(`${topic}/info`)) continue;
        card = this.add(topic);
        membership = true;
      }
      card.dev = device(topic);
      card.dirty = true;
      if (card.visible || changes.all) card.update();
    }
    if (membership || touched.length) this.arrange();
  }

  add(topic) {
    const card = new Card(topic);
    this.cards.set(topic, card);
    this.observer.observe(card.root);
    card.update();
    return card;
  }

  remove(topic) {
    const card = this.cards.get(topic);
    this.observer.unobserve(card.root);
    card.root.remove();
    this.cards.delete(topic);
  }

  matches(card) {
    const state = status(card.dev);
    if (this.filter === "online" && state === "offline") return false;
    if (this.filter === "offline" && state !== "offline") return false;
    if (this.filter === "playing" && !["playing", "buffering", "paused"].includes(state)) return false;
    const q = this.query.trim().toLowerCase();
    if (!q) return true;
    const playing = nowPlaying(card.dev);
    return [displayName(card.dev), card.topic, card.dev.info?.model, playing.app, playing.title, playing.artist]
      .some((value) => typeof value === "string" && value.toLowerCase().includes(q));
  }

  /** Filters and sorts the cards in place (DOM nodes move; nothing is rebuilt). */
  arrange() {
    const list = [...this.cards.values()];
    const key = (card) => {
      if (this.sort === "status") return `${ORDER[status(card.dev)] ?? 9}${displayName(card.dev).toLowerCase()}`;
      if (this.sort === "type") return `${card.dev.info?.cast_type || "z"}${displayName(card.dev).toLowerCase()}`;
      return displayName(card.dev).toLowerCase();
    };
    list.sort((a, b) => key(a).localeCompare(key(b)));
    let shown = 0;
    list.forEach((card, index) => {
      const visible = this.matches(card);
      card.root.hidden = !visible;
      if (visible) shown += 1;
      if (this.grid.children[index] !== card.root) this.grid.insertBefore(card.root, this.grid.children[index] || null);
    });
    setText(this.count, `${shown} of ${list.length}`);
    setText(this.empty, list.length === 0 ? (store.live ? "No devices yet. The bridge finds them by mDNS or from its configuration." : "Connecting to the bridge…")
      : shown === 0 ? "No device matches." : "");
    this.empty.hidden = list.length > 0 && shown > 0;
  }

  tick(now) {
    for (const card of this.cards.values()) {
      if (card.visible && !card.root.hidden && card.dev?.media?.state === "playing") card.controls.tick(now);
    }
  }

  destroy() { this.observer.disconnect(); }
}

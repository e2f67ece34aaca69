// Small helpers shared by the pages: DOM building (text only, never HTML from data), icons,
// time formatting and the live media position.

const SVG = "http://www.w3.org/2000/svg";

/** el("div", {class: "x", onclick: f}, child, "text") */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const PATHS = {
  play: "M8 5v14l11-7z",
  pause: "M6 5h4v14H6zm8 0h4v14h-4z",
  stop: "M6 6h12v12H6z",
  next: "M6 18l8.5-6L6 6v12zM16 6v12h2V6h-2z",
  previous: "M6 6h2v12H6zm3.5 6l8.5 6V6z",
  volume: "M3 9v6h4l5 5V4L7 9H3zm13.5 3A4.5 4.5 0 0 0 14 8v8a4.5 4.5 0 0 0 2.5-4zM14 3.2v2.1a7 7 0 0 1 0 13.4v2.1a9 9 0 0 0 0-17.6z",
  muted: "M16.5 12A4.5 4.5 0 0 0 14 8v2.2l2.45 2.45c.03-.2.05-.42.05-.65zM19 12c0 .94-.2 1.82-.54 2.64l1.51 1.51A8.8 8.8 0 0 0 21 12a9 9 0 0 0-7-8.8v2.1A7 7 0 0 1 19 12zM4.27 3 3 4.27 7.73 9H3v6h4l5 5v-6.73l4.25 4.25c-.67.52-1.42.93-2.25 1.18v2.1a9 9 0 0 0 3.69-1.81L19.73 21 21 19.73l-9-9L4.27 3zM12 4 9.91 6.09 12 8.18V4z",
  video: "M21 3H3a2 2 0 0 0-2 2v12a2 2 0 0 0 2 2h5v2h8v-2h5a2 2 0 0 0 2-2V5a2 2 0 0 0-2-2zm0 14H3V5h18v12z",
  audio: "M17 2H7a2 2 0 0 0-2 2v16a2 2 0 0 0 2 2h10a2 2 0 0 0 2-2V4a2 2 0 0 0-2-2zm-5 2a2 2 0 1 1 0 4 2 2 0 0 1 0-4zm0 16a5 5 0 1 1 0-10 5 5 0 0 1 0 10zm0-8a3 3 0 1 0 0 6 3 3 0 0 0 0-6z",
  group: "M4 6h6v12H4zm10-2h6v16h-6zM6 8v2h2V8zm10-2v2h2V6z",
  music: "M12 3v10.55A4 4 0 1 0 14 17V7h4V3h-6z",
  back: "M20 11H7.83l5.59-5.59L12 4l-8 8 8 8 1.41-1.41L7.83 13H20v-2z",
  refresh: "M17.65 6.35A8 8 0 1 0 19.73 14h-2.08A6 6 0 1 1 12 6c1.66 0 3.14.69 4.22 1.78L13 11h7V4l-2.35 2.35z",
};

export function icon(name, label) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  if (label) { svg.setAttribute("role", "img"); svg.setAttribute("aria-label", label); }
  else svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS(SVG, "path");
  path.setAttribute("d", PATHS[name] || PATHS.music);
  svg.append(path);
  return svg;
}

/** 212.5 → "3:32", 3725 → "1:02:05" */
export function clock(seconds) {
  if (!Number.isFinite(seconds) || seconds < 0) return "–:––";
  const s = Math.floor(seconds % 60), m = Math.floor(seconds / 60) % 60, h = Math.floor(seconds / 3600);
  const ss = String(s).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}

export function duration(seconds) {
  if (!Number.isFinite(seconds)) return "–";
  const d = Math.floor(seconds / 86400), h = Math.floor(seconds / 3600) % 24, m = Math.floor(seconds / 60) % 60;
  if (d > 0) return `${d} d ${h} h`;
  if (h > 0) return `${h} h ${m} min`;
  if (m > 0) return `${m} min ${Math.floor(seconds % 60)} s`;
  return `${Math.floor(seconds)} s`;
}

/** An ISO time as "10:15:30" (today) or a date and time. */
export function timeOfDay(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  const today = new Date().toDateString() === date.toDateString();
  return today ? date.toLocaleTimeString() : date.toLocaleString();
}

/** Only http(s) URLs are shown as images or links. */
export function safeURL(value) {
  if (typeof value !== "string" || value.length > 4096) return null;
  try {
    const url = new URL(value, location.href);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch { return null; }
}

/** Where playback is now: position + elapsed × rate while playing, capped at the duration. */
export function livePosition(media, now = Date.now()) {
  if (!media || typeof media.position !== "number") return null;
  let position = media.position;
  if (media.state === "playing" && media.position_updated_at) {
    const since = (now - Date.parse(media.position_updated_at)) / 1000;
    if (Number.isFinite(since) && since > 0) position += since * (media.playback_rate || 1);
  }
  if (typeof media.duration === "number" && media.duration > 0) position = Math.min(position, media.duration);
  return Math.max(0, position);
}

/** The best image of a media document (the largest listed), or null. */
export function artwork(media) {
  const images = Array.isArray(media?.images) ? media.images : [];
  let best = null;
  for (const image of images) {
    const url = safeURL(image?.url);
    if (url && (!best || (image.width || 0) > (best.width || 0))) best = { url, width: image.width || 0 };
  }
  return best?.url || null;
}

/** Replaces the children of `node`. */
export function replace(node, ...children) {
  node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

/** Sets textContent only when it changed (keeps selections and avoids layout work). */
export function setText(node, text) {
  const value = text === null || text === undefined ? "" : String(text);
  if (node.textContent !== value) node.textContent = value;
}

export function toast(title, detail, kind = "ok") {
  const box = document.getElementById("toasts");
  const item = el("div", { class: `toast ${kind}`, role: kind === "error" ? "alert" : "status" },
    el("strong", {}, title), detail ? el("span", {}, detail) : null);
  box.append(item);
  while (box.children.length > 4) box.firstElementChild.remove();
  setTimeout(() => item.remove(), kind === "error" ? 8000 : 3000);
}

/** Shows a command's response: errors always, successes only when `quiet` is false. */
export function showResponse(label, response, quiet = true) {
  if (response?.status === "error") {
    const code = response.error?.code || "error";
    toast(`${label}: ${code.replaceAll("_", " ")}`, response.error?.message || "", "error");
  } else if (!quiet) {
    toast(`${label}: done`);
  }
}

// The page: routes (/ = devices, /device/<topic>, /bridge), the theme, the connection, and the
// half-second tick that moves progress bars.
import { connect, subscribe } from "./connection.js";
import { BridgePage } from "./bridge.js";
import { DevicePage } from "./device.js";
import { DevicesPage } from "./devices.js";
import { login, session } from "./login.js";
import { el } from "./util.js";

const main = document.getElementById("main");
let page = null;

/** The page's path below its base (`/`, or Home Assistant's ingress path), with a leading `/`. */
const basePath = new URL(document.baseURI).pathname;
function pagePath() {
  const path = location.pathname.startsWith(basePath) ? location.pathname.slice(basePath.length - 1) : location.pathname;
  return decodeURIComponent(path);
}

function route() {
  page?.destroy();
  const path = pagePath();
  let nav = "devices";
  if (path.startsWith("/device/")) {
    page = new DevicePage(path.slice("/device/".length));
  } else if (path === "/bridge") {
    page = new BridgePage();
    nav = "bridge";
    document.title = "Bridge · cast2mqtt";
  } else {
    page = new DevicesPage();
    document.title = "cast2mqtt";
  }
  for (const link of document.querySelectorAll("[data-nav]")) link.classList.toggle("active", link.dataset.nav === nav);
  main.replaceChildren(page.root);
  page.changed({ all: true, devices: new Set(), bridge: true, logs: true, stats: true, connection: true });
  main.focus({ preventScroll: true });
}

function navigate(href) {
  href = new URL(href, document.baseURI).pathname;
  if (href === location.pathname) return;
  history.pushState(null, "", href);
  route();
  window.scrollTo(0, 0);
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("a[data-link]");
  if (!link || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  event.preventDefault();
  navigate(link.getAttribute("href"));
});
window.addEventListener("popstate", route);

function applyTheme(theme) {
  if (theme) document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}
applyTheme(localStorage.getItem("cast2mqtt.theme"));
document.getElementById("theme").addEventListener("click", () => {
  const dark = document.documentElement.dataset.theme
    ? document.documentElement.dataset.theme === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
  const next = dark ? "light" : "dark";
  localStorage.setItem("cast2mqtt.theme", next);
  applyTheme(next);
});

async function start() {
  try {
    const state = await session();
    if (state.auth_required && !state.authenticated) await login(main);
  } catch (error) {
    main.replaceChildren(el("p", { class: "empty" }, `The bridge cannot be reached: ${error.message}`));
    setTimeout(start, 3000);
    return;
  }
  subscribe((changes) => page?.changed(changes));
  route();
  connect();
  setInterval(() => page?.tick(Date.now()), 500);
}

start();

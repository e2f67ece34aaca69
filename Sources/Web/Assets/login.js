// The token form, shown when the bridge needs one (web.token or web.password_file) and the
// browser has no session cookie yet. The cookie (HttpOnly, SameSite=Strict) is set by the bridge.
import { el } from "./util.js";

/** Asks the bridge whether we may in: {auth_required, authenticated}. */
export async function session() {
  const response = await fetch("api/session", { credentials: "same-origin", cache: "no-store" });
  if (!response.ok) throw new Error(`the bridge answered ${response.status}`);
  return response.json();
}

/** Shows the form in `main`; resolves once the bridge accepted the token. */
export function login(main) {
  return new Promise((resolve) => {
    const token = el("input", { type: "password", name: "token", autocomplete: "current-password", required: true,
      "aria-label": "Token", placeholder: "web.token" });
    const error = el("p", { class: "error", role: "alert", dataset: { role: "login-error" } });
    const button = el("button", { type: "submit", class: "button primary" }, "Log in");
    const form = el("form", { dataset: { role: "login" }, onsubmit: async (event) => {
      event.preventDefault();
      button.disabled = true;
      error.textContent = "";
      try {
        const response = await fetch("api/login", { method: "POST", credentials: "same-origin",
          headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token: token.value }) });
        if (response.ok) { resolve(); return; }
        const body = await response.json().catch(() => ({}));
        error.textContent = response.status === 401 ? "That token is not right." : body.error || `The bridge answered ${response.status}.`;
      } catch (failure) {
        error.textContent = `The bridge cannot be reached: ${failure.message}`;
      }
      button.disabled = false;
      token.select();
    } }, token, button, error);
    main.replaceChildren(el("section", { class: "login panel" }, el("h1", {}, "Log in"),
      el("p", {}, "This bridge asks for its web token (web.token or web.password_file in its configuration)."), form));
    token.focus();
  });
}

/**
 * The page's bearer token. A gateway started with `TILLER_TOKEN` answers 401 to every `/v1` request
 * without it; the page then asks for the token once and keeps it in `sessionStorage` (this tab only,
 * gone when the tab closes), and sends it as `Authorization: Bearer` on every request, the event
 * streams included (they are read with `fetch`, which, unlike `EventSource`, can send headers). The
 * token never goes into a URL, so it never lands in server, proxy or browser history logs.
 */
import { h } from "./dom.js";
import "./auth.css";

const KEY = "tiller.token";

export function authHeaders(): Record<string, string> {
  const token = sessionStorage.getItem(KEY);
  return token ? { authorization: `Bearer ${token}` } : {};
}

let asking: Promise<void> | null = null;
const waiters = new Set<(asking: boolean) => void>();

/** Called with true while the page waits for a token (the connection badge says so). */
export function onTokenWanted(listener: (asking: boolean) => void): void {
  waiters.add(listener);
}

/**
 * After a 401: forgets the token that was refused (if any) and asks for one. Every request refused
 * meanwhile waits for the same answer, so the question is asked once.
 */
export function askForToken(): Promise<void> {
  if (asking) return asking;
  const refused = sessionStorage.getItem(KEY) !== null;
  sessionStorage.removeItem(KEY);
  for (const listener of waiters) listener(true);
  asking = new Promise<void>((resolve) => {
    const input = h("input", {
      id: "token-input",
      type: "password",
      autocomplete: "current-password",
      placeholder: "TILLER_TOKEN",
      "aria-label": "Access token",
      required: true,
    });
    const form = h(
      "form",
      { id: "token-form", class: "token-form" },
      h("h2", {}, "This gateway needs its access token"),
      h(
        "p",
        {},
        refused
          ? "The token was refused. Enter the token the server was started with (TILLER_TOKEN)."
          : "The server was started with TILLER_TOKEN. Enter it to continue; it is kept in this tab only.",
      ),
      input,
      h("button", { type: "submit" }, "Continue"),
    );
    const overlay = h("div", { class: "token-overlay" }, form);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const value = input.value.trim();
      if (!value) return;
      sessionStorage.setItem(KEY, value);
      overlay.remove();
      asking = null;
      for (const listener of waiters) listener(false);
      resolve();
    });
    document.body.append(overlay);
    input.focus();
  });
  return asking;
}

/** `fetch` with the token; a 401 asks for the token and tries again with the new one. */
export async function authFetch(url: string, init: RequestInit = {}): Promise<Response> {
  for (;;) {
    const response = await fetch(url, {
      ...init,
      headers: { ...(init.headers as Record<string, string> | undefined), ...authHeaders() },
    });
    if (response.status !== 401) return response;
    await response.body?.cancel().catch(() => undefined);
    await askForToken();
  }
}

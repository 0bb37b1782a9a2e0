// Calls to the service's public JSON API (/tokenizers, /encode, /render_chat): the bearer
// token kept in sessionStorage, errors as ApiError (the service's error object), and
// latest-wins channels so a stale answer never overwrites a newer one.

import { setBusy } from "./busy.js";
import { $ } from "./dom.js";

export class ApiError extends Error {
  constructor(status, error) {
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.error = error;
  }
}

const TOKEN_KEY = "tokserve-token";

export function authToken() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

export function setAuthToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

// The answer's JSON; throws ApiError (a 401 shows the token row) or an AbortError.
export async function api(method, path, body, signal) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const token = authToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  setBusy(1);
  try {
    let res;
    try {
      res = await fetch(path, {
        method, headers, signal,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      if (e.name === "AbortError") throw e;
      throw new ApiError(0, { code: "network_error", message: `the service did not answer (${e.message})` });
    }
    let data = null;
    try { data = await res.json(); } catch (_) { /* not JSON: reported below */ }
    if (!res.ok) {
      if (res.status === 401) $("#auth-row").hidden = false;
      const error = data && data.error ? data.error
        : { code: `http_${res.status}`, message: res.statusText || "request failed" };
      throw new ApiError(res.status, error);
    }
    return data;
  } finally {
    setBusy(-1);
  }
}

// Latest-wins: a new request aborts the previous one; a stale answer is dropped (null).
// Otherwise {ok: true, value} or {ok: false, error}.
export function channel() {
  let ctrl = null;
  let seq = 0;
  return async (run) => {
    if (ctrl) ctrl.abort();
    ctrl = new AbortController();
    const mine = ++seq;
    try {
      const value = await run(ctrl.signal);
      return mine === seq ? { ok: true, value } : null;
    } catch (error) {
      if (error.name === "AbortError" || mine !== seq) return null;
      return { ok: false, error };
    }
  };
}

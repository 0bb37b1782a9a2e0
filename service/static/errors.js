// Error boxes: an API error (status, code, message and the details the service lists:
// literals, message index, available names, validation errors) or a client-side problem,
// shown in a box; null hides the box.

import { ApiError } from "./api.js";

export function showError(box, error) {
  box.replaceChildren();
  if (!error) { box.hidden = true; return; }
  const e = error instanceof ApiError ? error.error : { code: "client_error", message: String(error) };
  const status = error instanceof ApiError && error.status ? `${error.status} ` : "";
  const head = document.createElement("b");
  head.textContent = `${status}${e.code}`;
  box.append(head, `: ${e.message}`);
  const extra = [];
  if (Array.isArray(e.literals)) extra.push(`literals: ${e.literals.map((l) => JSON.stringify(l)).join(", ")}`);
  if (e.message_index !== undefined) extra.push(`message #${e.message_index}`);
  if (Array.isArray(e.available) && e.available.length) extra.push(`available: ${e.available.join(", ")}`);
  if (Array.isArray(e.detail)) extra.push(e.detail.map((d) => `${(d.loc || []).join(".")}: ${d.msg}`).join("; "));
  if (extra.length) {
    const small = document.createElement("div");
    small.className = "details";
    small.textContent = extra.join(" · ");
    box.append(small);
  }
  box.hidden = false;
  box.dataset.code = e.code;
}

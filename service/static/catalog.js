// The served tokenizers as /tokenizers lists them: the catalog, the selects that offer them,
// each one's special tokens (to mark special ids), and the "answered by" line that names the
// tokenizer and hash an answer came from.

import { $ } from "./dom.js";

export const catalog = { list: [], byRef: new Map(), default: null };

// Keeps the /tokenizers answer and fills every tokenizer select from it (a select keeps its
// choice if that tokenizer is still served).
export function setCatalog(data) {
  catalog.list = data.tokenizers;
  catalog.byRef = new Map(data.tokenizers.map((e) => [e.tokenizer, e]));
  catalog.default = data.default;
  const all = data.tokenizers;
  fillSelect($("#tokenizer"), all, data.default);
  fillSelect($("#cmp-a-tokenizer"), all, data.default);
  const other = all.find((e) => e.tokenizer !== data.default);
  fillSelect($("#cmp-b-tokenizer"), all, other ? other.tokenizer : data.default);
  const chatty = all.filter((e) => Object.keys(e.chat_templates || {}).length > 0);
  fillSelect($("#chat-tokenizer"), chatty, chatty.length ? chatty[0].tokenizer : "");
}

function fillSelect(select, entries, preferred) {
  const keep = select.value;
  select.replaceChildren(...entries.map((e) => {
    const opt = document.createElement("option");
    opt.value = e.tokenizer;
    opt.textContent = e.tokenizer;
    return opt;
  }));
  const refs = entries.map((e) => e.tokenizer);
  select.value = refs.includes(keep) ? keep : refs.includes(preferred) ? preferred : (refs[0] || "");
}

// id -> literal of the tokenizer's special tokens.
export function specialsOf(ref) {
  const entry = catalog.byRef.get(ref);
  const byId = new Map();
  if (entry) for (const [literal, id] of Object.entries(entry.special_tokens || {})) byId.set(id, literal);
  return byId;
}

export function setMeta(refEl, hashEl, data) {
  refEl.textContent = data ? data.tokenizer : "–";
  hashEl.textContent = data ? data.tokenizer_hash : "–";
  hashEl.title = data ? data.tokenizer_hash : "";
}

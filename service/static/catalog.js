// The served tokenizers as /tokenizers lists them: the catalog, the selects that offer them,
// each one's special tokens (to mark special ids), and the "answered by" line that names the
// tokenizer and hash an answer came from. Also what chat mode offers besides tokenizers with
// a chat template: those whose chat /count follows OpenAI's documented accounting (GPT-4o's
// o200k_base, GPT-4's cl100k_base: OpenAI publishes no template), and the model table
// (GET /models), so a link may name a model (gpt-4o) where a tokenizer is expected.

import { api } from "./api.js";
import { $ } from "./dom.js";

// The presets whose chat /count is OpenAI's documented accounting when the tokenizer has no
// template (the service's operations/chat/openai_format.py, ENCODINGS).
const OPENAI_CHAT_PRESETS = ["o200k_base", "cl100k_base"];

// byRef: ref -> /tokenizers entry; openai: refs counted by OpenAI's chat format; models:
// model name -> tokenizer name (GET /models, exact names only).
export const catalog = { list: [], byRef: new Map(), default: null, openai: new Set(), models: new Map() };

const hasTemplate = (e) => Object.keys(e.chat_templates || {}).length > 0;

// Loads /tokenizers, /models and, for each tokenizer without a chat template, its manifest
// (whose preset says whether OpenAI's chat accounting applies), then fills the selects.
// Throws the /tokenizers error (a 401 shows the token row); the others are optional.
export async function loadCatalog() {
  const optional = (path) => api("GET", path).catch(() => null);
  const [data, models] = await Promise.all([api("GET", "/tokenizers"), optional("/models")]);
  const bare = data.tokenizers.filter((e) => !hasTemplate(e));
  const details = await Promise.all(bare.map((e) => optional(`/tokenizers/${encodeURIComponent(e.tokenizer)}`)));
  const openai = details.filter((d) => d && d.manifest && OPENAI_CHAT_PRESETS.includes(d.manifest.preset))
    .map((d) => d.tokenizer);
  setCatalog(data, openai, models ? models.models : []);
}

// Keeps the answers and fills every tokenizer select from them (a select keeps its choice if
// that tokenizer is still served).
function setCatalog(data, openai, models) {
  catalog.list = data.tokenizers;
  catalog.byRef = new Map(data.tokenizers.map((e) => [e.tokenizer, e]));
  catalog.default = data.default;
  catalog.openai = new Set(openai);
  catalog.models = new Map(models.filter((m) => m.served).map((m) => [m.model, m.tokenizer]));
  const all = data.tokenizers;
  fillSelect($("#tokenizer"), all, data.default);
  fillSelect($("#cmp-a-tokenizer"), all, data.default);
  const other = all.find((e) => e.tokenizer !== data.default);
  fillSelect($("#cmp-b-tokenizer"), all, other ? other.tokenizer : data.default);
  const chatty = all.filter((e) => hasTemplate(e) || catalog.openai.has(e.tokenizer));
  const templated = chatty.find(hasTemplate);
  fillSelect($("#chat-tokenizer"), chatty, templated ? templated.tokenizer : (chatty.length ? chatty[0].tokenizer : ""));
}

// The model names that use tokenizer `ref` ("name@version"), for labels.
function modelsOf(ref) {
  const name = ref.split("@")[0];
  return Array.from(catalog.models).filter(([, t]) => t === name).map(([m]) => m);
}

function fillSelect(select, entries, preferred) {
  const keep = select.value;
  const chat = select.id === "chat-tokenizer";
  select.replaceChildren(...entries.map((e) => {
    const opt = document.createElement("option");
    opt.value = e.tokenizer;
    opt.textContent = e.tokenizer;
    if (chat && catalog.openai.has(e.tokenizer)) {
      const models = modelsOf(e.tokenizer);
      const known = ["gpt-4o", "gpt-4"].filter((m) => models.includes(m));
      opt.textContent = `${e.tokenizer} · OpenAI chat format${known.length ? ` (${known[0]}, …)` : ""}`;
      opt.title = models.length ? `models: ${models.join(", ")}` : "";
      opt.dataset.openai = "";
    }
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

// Chat mode's inputs: the list of messages (role + content rows, edited in place), the
// template choice for the chosen tokenizer, and each message's token count shown on its row.

import { catalog } from "./catalog.js";
import { $, tabInserts } from "./dom.js";

export const DEFAULT_MESSAGES = [
  { role: "system", content: "You are a concise assistant." },
  { role: "user", content: "Say hello in Japanese, with an emoji 👋🏽" },
  { role: "assistant", content: "こんにちは 👋🏽 (konnichiwa)" },
];

export function addMessage(role, content) {
  const li = $("#message-template").content.firstElementChild.cloneNode(true);
  tabInserts($(".content", li));
  const select = $(".role", li);
  if (!Array.from(select.options, (o) => o.value).includes(role)) { // e.g. "developer" from a link
    const opt = document.createElement("option");
    opt.textContent = role;
    select.append(opt);
  }
  select.value = role;
  $(".content", li).value = content;
  $("#messages").append(li);
  return li;
}

export function setMessages(list) {
  $("#messages").replaceChildren();
  for (const m of list) addMessage(m.role, m.content);
}

export function readMessages() {
  return Array.from($("#messages").children, (li) => ({
    role: $(".role", li).value,
    content: $(".content", li).value,
  }));
}

// The chosen chat tokenizer's templates (keeping the chosen one if it has it, else its
// default template); for one counted by OpenAI's chat format, "none" (and the generation
// prompt, which that format always counts, is not a choice).
export function fillTemplates() {
  const ref = $("#chat-tokenizer").value;
  const entry = catalog.byRef.get(ref);
  const select = $("#chat-template");
  const names = entry ? Object.keys(entry.chat_templates || {}) : [];
  const keep = select.value;
  const openai = catalog.openai.has(ref) && !names.length;
  select.replaceChildren(...names.map((n) => {
    const opt = document.createElement("option");
    opt.value = n;
    opt.textContent = n;
    return opt;
  }));
  if (openai) {
    const opt = document.createElement("option");
    opt.value = "";
    opt.textContent = "none: OpenAI's chat format";
    select.append(opt);
  }
  const prompt = $("#chat-gen-prompt");
  prompt.disabled = openai;
  prompt.parentElement.title = openai ? "OpenAI's chat format always counts the reply's priming" : "";
  const preferred = entry && entry.default_chat_template;
  select.value = names.includes(keep) ? keep : names.includes(preferred) ? preferred : (names[0] || "");
}

// Each message's own token count (the API's message_counts: the tokens that overlap that
// message's strings in the rendered prompt), shown on its row; "–" when unknown. Also the
// template and tools counts of the answer `d` (null: unknown).
export function showMessageCounts(d) {
  const byIndex = new Map(((d && d.message_counts) || []).map((m) => [m.index, m.tokens]));
  Array.from($("#messages").children).forEach((li, k) => {
    const badge = $(".msg-count", li);
    const n = byIndex.get(k);
    badge.textContent = n === undefined ? "– tokens" : `${n} token${n === 1 ? "" : "s"}`;
    if (n === undefined) delete badge.dataset.tokens; else badge.dataset.tokens = String(n);
  });
  const has = d && d.template_tokens !== undefined;
  $("#chat-template-count").textContent = has ? String(d.template_tokens) : "–";
  $("#chat-tools-count").textContent = has ? String(d.tools_tokens) : "–";
  $("#chat-tools-stat").hidden = !(has && d.tools_tokens > 0);
}

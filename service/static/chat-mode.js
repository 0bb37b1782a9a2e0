// Chat mode: the messages rendered with a chat template (/render_chat with offsets, the
// assistant mask and per-message counts) into the chat viewer: template-made special tokens
// outlined, assistant (trained) tokens underlined, counts per message and for the template.
// A tokenizer without a template that OpenAI's chat format counts (o200k_base, cl100k_base)
// is shown by openai-chat.js instead. A literal refused under "reject" is shown escaped, and
// marked (literals.js).

import { api, channel } from "./api.js";
import { catalog, setMeta, specialsOf } from "./catalog.js";
import { readMessages, showMessageCounts } from "./chat-form.js";
import { $ } from "./dom.js";
import { showError } from "./errors.js";
import { flaggedTokens, literalRanges, refusesLiteral, showLiteralNotice } from "./literals.js";
import { askOpenAI, describeMethod } from "./openai-chat.js";
import { syncLink } from "./share-link.js";
import { views } from "./state.js";
import { cpToUtf16 } from "./unicode.js";

// /render_chat of `messages`, as runChat shows it (see openai-chat.js for the shape).
async function askTemplate(tokenizer, messages, literals, signal) {
  const body = {
    tokenizer, messages,
    add_generation_prompt: $("#chat-gen-prompt").checked,
    reserved_literals: literals,
    return_offsets: true,
    return_assistant_mask: true,
    return_message_counts: true,
  };
  if ($("#chat-template").value) body.template = $("#chat-template").value;
  const d = await api("POST", "/render_chat", body, signal);
  // /render_chat's offsets are code points; the viewer's are UTF-16.
  const map = cpToUtf16(d.text);
  const labels = d.labels || [];
  return {
    d, text: d.text, ids: d.ids, strings: null, labels,
    offsets: d.offsets.map(([s, e]) => [map[s], map[e]]),
    assistant: (i) => labels[i] !== undefined && labels[i] !== -100,
    assistantSpans: (d.assistant_spans || []).map(([s, e]) => [map[s], map[e]]),
  };
}

// The special-token literals of `specials` (id -> literal) written in the messages.
function literalsIn(messages, specials) {
  const all = new Set(specials.values());
  return Array.from(all).filter((lit) => messages.some((m) => m.content.includes(lit) || m.role.includes(lit)));
}

function showFailure(error) {
  showError($("#chat-error"), error);
  showLiteralNotice($("#chat-notice"), null);
  $("#chat-method").hidden = true;
  views.chat.clear();
  views.chat.viewer.dataset.status = "error";
  $("#chat-count").textContent = "–";
  $("#chat-assistant-count").textContent = "–";
  showMessageCounts(null);
}

const chatChan = channel();
export async function runChat() {
  const view = views.chat;
  const viewer = view.viewer;
  const tokenizer = $("#chat-tokenizer").value;
  if (!tokenizer) {
    showError($("#chat-error"), "no served tokenizer has a chat template");
    viewer.dataset.status = "error";
    return;
  }
  const messages = readMessages();
  const literals = $("#chat-literals").value;
  const ask = catalog.openai.has(tokenizer) ? askOpenAI : askTemplate;
  viewer.dataset.status = "loading";
  const r = await chatChan(async (signal) => {
    try {
      return { shown: await ask(tokenizer, messages, literals, signal), refusal: null };
    } catch (e) {
      if (literals !== "reject" || !refusesLiteral(e)) throw e;
      return { shown: await ask(tokenizer, messages, "escape", signal), refusal: e };
    }
  });
  if (r === null) return;
  syncLink();
  $("#chat-copy-status").textContent = "";
  if (!r.ok) { showFailure(r.error); return; }
  showError($("#chat-error"), null);
  const { shown, refusal } = r.value;
  const d = shown.d;
  const specials = specialsOf(d.tokenizer);
  const special = (i) => {
    const lit = specials.get(shown.ids[i]);
    const [s, e] = shown.offsets[i];
    return lit !== undefined && shown.text.slice(s, e) === lit ? lit : null;
  };
  const found = refusal ? literalsIn(messages, specials) : [];
  showLiteralNotice($("#chat-notice"), refusal, found, { field: "reserved_literals", value: "escape" });
  view.show(shown.text, {
    ids: shown.ids, offsets: shown.offsets, strings: shown.strings, special,
    assistant: shown.assistant,
    flagged: refusal ? flaggedTokens(shown.offsets, literalRanges(shown.text, found), special) : () => false,
  });
  viewer.dataset.status = "ready";
  viewer.dataset.count = String(d.count);
  viewer.dataset.method = d.method || "chat_template";
  viewer.assistantSpans = shown.assistantSpans || [];
  $("#chat-count").textContent = String(d.count);
  $("#chat-assistant-count").textContent = shown.labels
    ? String(shown.labels.filter((x) => x !== -100).length) : "–";
  $("#chat-method").textContent = d.method === "openai-chat-format" ? describeMethod(d) : "";
  $("#chat-method").hidden = d.method !== "openai-chat-format";
  showMessageCounts(d);
  setMeta($("#chat-ref"), $("#chat-hash"), d);
  $("#chat-template-hash").textContent = d.template_hash || "–";
  $("#chat-template-hash").title = d.template_hash || "";
}

// Chat mode: the messages rendered with a chat template (/render_chat with offsets, the
// assistant mask and per-message counts) into the chat viewer: template-made special tokens
// outlined, assistant (trained) tokens underlined, counts per message and for the template.

import { api, channel } from "./api.js";
import { setMeta, specialsOf } from "./catalog.js";
import { readMessages, showMessageCounts } from "./chat-form.js";
import { $ } from "./dom.js";
import { showError } from "./errors.js";
import { syncLink } from "./share-link.js";
import { views } from "./state.js";
import { cpToUtf16 } from "./unicode.js";

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
  const body = {
    tokenizer,
    messages: readMessages(),
    add_generation_prompt: $("#chat-gen-prompt").checked,
    reserved_literals: $("#chat-literals").value,
    return_offsets: true,
    return_assistant_mask: true,
    return_message_counts: true,
  };
  if ($("#chat-template").value) body.template = $("#chat-template").value;
  viewer.dataset.status = "loading";
  const r = await chatChan((signal) => api("POST", "/render_chat", body, signal));
  if (r === null) return;
  syncLink();
  $("#chat-copy-status").textContent = "";
  if (!r.ok) {
    showError($("#chat-error"), r.error);
    view.clear();
    viewer.dataset.status = "error";
    $("#chat-count").textContent = "–";
    $("#chat-assistant-count").textContent = "–";
    showMessageCounts(null);
    return;
  }
  showError($("#chat-error"), null);
  const d = r.value;
  // /render_chat's offsets are code points; the viewer's are UTF-16.
  const map = cpToUtf16(d.text);
  const offsets = d.offsets.map(([s, e]) => [map[s], map[e]]);
  const specials = specialsOf(d.tokenizer);
  const labels = d.labels || [];
  view.show(d.text, {
    ids: d.ids, offsets, strings: null,
    special: (i) => {
      const lit = specials.get(d.ids[i]);
      const [s, e] = offsets[i];
      return lit !== undefined && d.text.slice(s, e) === lit ? lit : null;
    },
    assistant: (i) => labels[i] !== undefined && labels[i] !== -100,
  });
  viewer.dataset.status = "ready";
  viewer.dataset.count = String(d.count);
  viewer.assistantSpans = (d.assistant_spans || []).map(([s, e]) => [map[s], map[e]]);
  $("#chat-count").textContent = String(d.count);
  $("#chat-assistant-count").textContent = String(labels.filter((x) => x !== -100).length);
  showMessageCounts(d);
  setMeta($("#chat-ref"), $("#chat-hash"), d);
  $("#chat-template-hash").textContent = d.template_hash || "–";
  $("#chat-template-hash").title = d.template_hash || "";
}

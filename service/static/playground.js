// tokserve playground: the reference client of the service's own offsets. This module is
// the entry point (index.html loads it as <script type="module">): it switches modes, wires
// the controls to the runs, and loads the served tokenizers at start.
//
// The modules, each with one job (plain ES modules, no build step, no dependencies, all
// served by the service itself so the page works offline):
//   state.js         the modes, the mode shown, the token views by name
//   share-link.js    the page state in the URL fragment (the address bar is a share link)
//   api.js           calls to the JSON API, latest-wins channels; busy.js the settled signal
//   catalog.js       the served tokenizers (and models) and the selects offering them
//   literals.js      a text the API refuses for a special-token literal, shown as text
//   text-mode.js, compare-mode.js, chat-mode.js (+ chat-form.js, its inputs; openai-chat.js,
//                    OpenAI's chat format for tokenizers without a template): the modes
//   token-view.js    a viewer and its ids view, drawn chunk by chunk (chunks.js) with token
//                    spans (draw.js); hover.js links tokens and ids and shows the card
//   unicode.js       UTF-16 / code point / UTF-8 index arithmetic
//   errors.js, dom.js  error boxes; `$`, the clipboard and the Tab key in text boxes

import { authToken, setAuthToken } from "./api.js";
import { debounced, setBusy } from "./busy.js";
import { loadCatalog } from "./catalog.js";
import { DEFAULT_MESSAGES, addMessage, fillTemplates, readMessages, setMessages } from "./chat-form.js";
import { runChat } from "./chat-mode.js";
import { runCompare } from "./compare-mode.js";
import { $, copyText, tabInserts } from "./dom.js";
import { showError } from "./errors.js";
import { setupHover } from "./hover.js";
import { applyLink, copyLink, syncLink } from "./share-link.js";
import { MODES, page, views } from "./state.js";
import { runText } from "./text-mode.js";
import { TokenView } from "./token-view.js";

const runners = { text: runText, compare: runCompare, chat: runChat };
const schedule = {
  text: debounced(() => runText()),
  compare: debounced(() => runCompare()),
  chat: debounced(() => runChat()),
};

function setMode(next) {
  const mode = page.mode = MODES.includes(next) ? next : "text";
  document.body.dataset.mode = mode;
  for (const m of MODES) {
    $(`#mode-${m}`).hidden = m !== mode;
    $(`#tab-${m}`).setAttribute("aria-selected", String(m === mode));
  }
  $("#text-input-section").hidden = mode === "chat";
  runners[mode]();
}

// The ids as a JSON list, as the API returned them.
async function copyIds(view, status) {
  await copyText(view.data ? JSON.stringify(view.data.t.ids) : "[]");
  status.textContent = "copied";
}

function wire() {
  views.text = new TokenView($("#viewer"), $("#ids"));
  views.a = new TokenView($("#cmp-a-viewer"));
  views.b = new TokenView($("#cmp-b-viewer"));
  views.chat = new TokenView($("#chat-viewer"), $("#chat-ids"));
  for (const m of MODES) $(`#tab-${m}`).addEventListener("click", () => setMode(m));
  // Another link opened in this tab (our own updates use replaceState: no event).
  window.addEventListener("hashchange", async () => {
    setBusy(1);
    try { setMode(await applyLink(location.hash.slice(1))); } finally { setBusy(-1); }
  });
  // The text box and its options belong to text and compare mode (text mode's when hidden).
  const textual = () => (page.mode === "chat" ? "text" : page.mode);
  $("#input").addEventListener("input", () => schedule[textual()]());
  tabInserts($("#input"));
  for (const id of ["#tokenizer", "#special-policy", "#add-special"]) {
    $(id).addEventListener("change", () => runners[textual()]());
  }
  for (const id of ["#cmp-a-tokenizer", "#cmp-b-tokenizer"]) $(id).addEventListener("change", () => runCompare());
  $("#show-ws").addEventListener("change", (ev) => {
    document.body.classList.toggle("show-ws", ev.target.checked);
    syncLink();
  });
  document.body.classList.toggle("show-ws", $("#show-ws").checked);
  $("#copy-ids").addEventListener("click", () => copyIds(views.text, $("#copy-status")));
  $("#chat-copy-ids").addEventListener("click", () => copyIds(views.chat, $("#chat-copy-status")));
  $("#share").addEventListener("click", copyLink);
  $("#chat-tokenizer").addEventListener("change", () => { fillTemplates(); runChat(); });
  for (const id of ["#chat-template", "#chat-literals", "#chat-gen-prompt"]) $(id).addEventListener("change", () => runChat());
  const messages = $("#messages");
  messages.addEventListener("input", () => schedule.chat());
  messages.addEventListener("change", () => schedule.chat());
  messages.addEventListener("click", (ev) => {
    if (ev.target.classList.contains("remove")) { ev.target.closest("li").remove(); runChat(); }
  });
  $("#add-message").addEventListener("click", () => {
    const last = readMessages().pop();
    addMessage(last && last.role === "user" ? "assistant" : "user", "");
    runChat();
  });
  $("#auth-token").value = authToken();
  $("#auth-token").addEventListener("change", (ev) => {
    setAuthToken(ev.target.value);
    loadTokenizers();
  });
  setMessages(DEFAULT_MESSAGES);
}

let linkApplied = false;
async function loadTokenizers() {
  try {
    await loadCatalog();
  } catch (e) {
    showError($("#global-error"), e);
    return;
  }
  showError($("#global-error"), null);
  fillTemplates();
  // The link is read once (after a 401 and a token, this runs again: keep the edits).
  let next = page.mode;
  if (!linkApplied) {
    linkApplied = true;
    setBusy(1);
    try { next = await applyLink(location.hash.slice(1)); } finally { setBusy(-1); }
  }
  setMode(next);
}

document.addEventListener("DOMContentLoaded", () => {
  setupHover();
  wire();
  loadTokenizers();
});

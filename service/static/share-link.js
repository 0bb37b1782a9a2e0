// The page state in the URL fragment (never sent to the server), kept up to date after
// every run, so the address bar is always a link to what the page shows:
//   #mode=text&tokenizer=o200k_base%401&special=reject&bos=0&text=Hello
//   #mode=compare&a=…&b=…&special=…&bos=…&text=…
//   #mode=chat&tokenizer=…&template=…&literals=…&genprompt=0&messages=[{"role":…}]
// plus ws=0 when whitespace is not shown. A payload (the text, or the messages as JSON)
// longer than LINK_INLINE_MAX once URL-encoded is stored deflated, base64url, under
// textz= / messagesz= (300k characters of prose: a link of ~100 kB). A bare "#chat" (the
// old form: the mode only) still opens that mode with the defaults.

import { setBusy } from "./busy.js";
import { catalog } from "./catalog.js";
import { fillTemplates, readMessages, setMessages } from "./chat-form.js";
import { $, copyText } from "./dom.js";
import { showError } from "./errors.js";
import { MODES, page } from "./state.js";

const LINK_INLINE_MAX = 2000;

function b64url(bytes) {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function unb64url(s) {
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}

async function deflate(text) {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream("deflate-raw"));
  return b64url(new Uint8Array(await new Response(stream).arrayBuffer()));
}

async function inflate(packed) {
  const stream = new Blob([unb64url(packed)]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  return new Response(stream).text();
}

async function putPayload(params, key, value) {
  if (new URLSearchParams({ [key]: value }).toString().length <= LINK_INLINE_MAX) params.set(key, value);
  else params.set(`${key}z`, await deflate(value));
}

async function linkFragment() {
  const mode = page.mode;
  const p = new URLSearchParams();
  p.set("mode", mode);
  if (mode === "chat") {
    p.set("tokenizer", $("#chat-tokenizer").value);
    if ($("#chat-template").value) p.set("template", $("#chat-template").value);
    p.set("literals", $("#chat-literals").value);
    p.set("genprompt", $("#chat-gen-prompt").checked ? "1" : "0");
  } else {
    if (mode === "text") p.set("tokenizer", $("#tokenizer").value);
    else { p.set("a", $("#cmp-a-tokenizer").value); p.set("b", $("#cmp-b-tokenizer").value); }
    p.set("special", $("#special-policy").value);
    p.set("bos", $("#add-special").checked ? "1" : "0");
  }
  if (!$("#show-ws").checked) p.set("ws", "0");
  if (mode === "chat") await putPayload(p, "messages", JSON.stringify(readMessages()));
  else await putPayload(p, "text", $("#input").value);
  return p.toString();
}

// Writes the page state into the address bar (replaceState: no history entry, no
// hashchange); the latest call wins.
let linkSeq = 0;
let linkDone = Promise.resolve();
export function syncLink() {
  const mine = ++linkSeq;
  setBusy(1);
  linkDone = linkFragment().then((fragment) => {
    if (mine === linkSeq && location.hash.slice(1) !== fragment) history.replaceState(null, "", `#${fragment}`);
  }).catch((e) => {
    showError($("#global-error"), `could not write the page state into the link (${e.message})`);
  }).finally(() => setBusy(-1));
  return linkDone;
}

export async function copyLink() {
  syncLink();
  await linkDone;
  await copyText(location.href);
  $("#share-status").textContent = "link copied";
}

// A served tokenizer for `ref` ("name@version", a bare name: its newest served version, or
// a model name such as gpt-4o: its tokenizer's, as the API's "tokenizer" field takes one)
// among `select`'s options, or null.
function resolveRef(select, ref) {
  const refs = Array.from(select.options, (o) => o.value);
  if (refs.includes(ref)) return ref;
  const newest = (name) => {
    const named = refs.filter((r) => r.split("@")[0] === name);
    return named.length ? named[named.length - 1] : null;
  };
  return newest(ref) || (catalog.models.has(ref) ? newest(catalog.models.get(ref)) : null);
}

// Puts the state in `fragment` (location.hash without "#") into the page; returns the mode.
// What the link asks for but this service cannot show is reported in #global-error.
export async function applyLink(fragment) {
  if (!fragment.includes("=")) return fragment; // "#chat": the mode only
  const p = new URLSearchParams(fragment);
  const problems = [];
  const choose = (select, value, what) => {
    if (value === null) return;
    const ok = Array.from(select.options, (o) => o.value).includes(value);
    if (ok) select.value = value; else problems.push(`${what} ${JSON.stringify(value)} is not available here`);
  };
  const tokenizer = (select, key) => {
    const ref = p.get(key);
    if (ref === null) return;
    const found = resolveRef(select, ref);
    if (found) select.value = found; else problems.push(`tokenizer ${JSON.stringify(ref)} is not served here`);
  };
  const payload = async (key) => {
    try {
      return p.has(`${key}z`) ? await inflate(p.get(`${key}z`)) : p.get(key);
    } catch (e) {
      problems.push(`the ${key} in the link could not be read (${e.message || e.name})`);
      return null;
    }
  };
  const next = MODES.includes(p.get("mode")) ? p.get("mode") : "text";
  if (next === "chat") {
    tokenizer($("#chat-tokenizer"), "tokenizer");
    fillTemplates();
    choose($("#chat-template"), p.get("template"), "chat template");
    choose($("#chat-literals"), p.get("literals"), "literal policy");
    if (p.has("genprompt")) $("#chat-gen-prompt").checked = p.get("genprompt") === "1";
    const raw = await payload("messages");
    if (raw !== null) {
      let list = null;
      try { list = JSON.parse(raw); } catch (_) { /* reported below */ }
      const valid = Array.isArray(list) && list.length > 0 && list.every((m) =>
        m && typeof m.role === "string" && typeof m.content === "string");
      if (valid) setMessages(list); else problems.push("the messages in the link are not a list of {role, content}");
    }
  } else {
    if (next === "text") tokenizer($("#tokenizer"), "tokenizer");
    else { tokenizer($("#cmp-a-tokenizer"), "a"); tokenizer($("#cmp-b-tokenizer"), "b"); }
    choose($("#special-policy"), p.get("special"), "special-token policy");
    if (p.has("bos")) $("#add-special").checked = p.get("bos") === "1";
    const text = await payload("text");
    if (text !== null) $("#input").value = text;
  }
  if (p.has("ws")) {
    $("#show-ws").checked = p.get("ws") !== "0";
    document.body.classList.toggle("show-ws", $("#show-ws").checked);
  }
  if (problems.length) showError($("#global-error"), `share link: ${problems.join("; ")}`);
  return next;
}

// tokserve playground: the reference client of the service's own offsets.
//
// Every coloured span in a viewer is a slice of the ORIGINAL text taken with the offsets the
// server returned (UTF-16 code units, so `text.slice(start, end)` is exact in JS). Nothing
// is re-tokenized or guessed here: if the server's offsets were off by one, the page would
// show it. Invariants kept by renderTokens():
//   * the viewer's textContent is exactly the text (markers are CSS pseudo-elements);
//   * every .tok span's textContent is text.slice(data-start, data-end);
//   * tokens whose offsets overlap (pieces of one multi-byte character) are one span
//     (class "multi", data-count = how many tokens share it).
// Plain browser JS, no build step, no dependencies; all DOM is built with textContent
// (never innerHTML), so text from the user or the server cannot inject markup.
"use strict";

(() => {
  const $ = (sel, root = document) => root.querySelector(sel);
  const DEBOUNCE_MS = 150;
  const COLOURS = 8;
  const utf8 = new TextEncoder();
  const utf8Replace = new TextDecoder("utf-8", { ignoreBOM: true }); // like Python's "replace"

  // ---------------------------------------------------------------- busy tracking
  // body[data-busy] counts pending debounces + requests: "0" means the page is settled
  // (what the browser tests wait for).
  let busy = 0;
  function setBusy(delta) {
    busy += delta;
    document.body.dataset.busy = String(busy);
  }

  // ---------------------------------------------------------------- API
  class ApiError extends Error {
    constructor(status, error) {
      super(error.message || `HTTP ${status}`);
      this.status = status;
      this.error = error;
    }
  }

  function authToken() {
    return sessionStorage.getItem("tokserve-token") || "";
  }

  async function api(method, path, body, signal) {
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
  function channel() {
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

  function debounced(fn, ms = DEBOUNCE_MS) {
    let timer = null;
    return () => {
      if (timer === null) setBusy(1); else clearTimeout(timer);
      timer = setTimeout(() => {
        timer = null;
        try { fn(); } finally { setBusy(-1); }
      }, ms);
    };
  }

  // ---------------------------------------------------------------- errors
  function showError(box, error) {
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

  // ---------------------------------------------------------------- text helpers
  const codePoints = (s) => { let n = 0; for (const _ of s) n++; return n; };

  // UTF-16 index -> UTF-8 byte offset (a low surrogate maps to its pair's start).
  function byteIndex(text) {
    const at = new Uint32Array(text.length + 1);
    let b = 0;
    for (let u = 0; u < text.length;) {
      const cp = text.codePointAt(u);
      const width = cp > 0xffff ? 2 : 1;
      at[u] = b;
      if (width === 2) at[u + 1] = b;
      b += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; // lone surrogate -> U+FFFD, 3
      u += width;
    }
    at[text.length] = b;
    return at;
  }

  // Code point index -> UTF-16 index (for /render_chat, whose offsets are code points).
  function cpToUtf16(text) {
    const map = [0];
    let u = 0;
    for (const ch of text) { u += ch.length; map.push(u); }
    return map;
  }

  const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(" ");

  // Tokens that overlap (share a character) are one group; zero-width tokens (inserted
  // BOS/EOS) are groups of their own. Groups are in text order; gaps are text no token covers.
  function buildGroups(offsets) {
    const groups = [];
    let g = null;
    offsets.forEach(([s, e], i) => {
      if (s === e) {
        groups.push({ start: s, end: e, members: [i], inserted: true });
        g = null;
        return;
      }
      if (g && s < g.end) {
        g.members.push(i);
        g.start = Math.min(g.start, s);
        g.end = Math.max(g.end, e);
        return;
      }
      g = { start: s, end: e, members: [i], inserted: false };
      groups.push(g);
    });
    return groups;
  }

  // Each token's own bytes, recovered from the text: the members of a group partition the
  // UTF-8 bytes of the characters the group covers, and each member's bytes decode (with
  // replacement, as the server's `tokens` were made) to its token string. A small search
  // finds that partition; null where it cannot be recovered (e.g. a normalizing tokenizer).
  function recoverBytes(text, groups, tokens) {
    const out = new Array(tokens.length).fill(null);
    const textBytes = utf8.encode(text);
    const at = byteIndex(text);
    for (const g of groups) {
      if (g.inserted) {
        for (const i of g.members) out[i] = utf8.encode(tokens[i]);
        continue;
      }
      const lo = at[g.start], hi = at[g.end];
      const k = g.members.length;
      if (hi - lo > 4096) continue;
      const dead = new Set();
      const cuts = [];
      const search = (m, pos) => {
        if (m === k) return pos === hi;
        const key = m * 8192 + (pos - lo);
        if (dead.has(key)) return false;
        const want = tokens[g.members[m]];
        const last = m === k - 1;
        for (let x = last ? hi : pos + 1; x <= hi; x++) {
          if (utf8Replace.decode(textBytes.subarray(pos, x)) === want) {
            cuts.push(x);
            if (search(m + 1, x)) return true;
            cuts.pop();
          }
        }
        dead.add(key);
        return false;
      };
      if (search(0, lo)) {
        let pos = lo;
        g.members.forEach((i, m) => { out[i] = textBytes.slice(pos, cuts[m]); pos = cuts[m]; });
      }
    }
    return out;
  }

  // ---------------------------------------------------------------- rendering
  const WS = { " ": "space", "\t": "tab", "\n": "nl", "\r": "cr", "\u00a0": "nbsp", "\u3000": "ideographic" };
  const WS_RE = /[ \t\n\r\u00a0\u3000]|[^ \t\n\r\u00a0\u3000]+/g;

  // Appends `s` to `el`, wrapping each whitespace character so CSS can make it visible
  // without changing the text.
  function appendText(el, s) {
    for (const [piece] of s.matchAll(WS_RE)) {
      const kind = WS[piece];
      if (kind) {
        const w = document.createElement("span");
        w.className = `ws ws-${kind}`;
        w.textContent = piece;
        el.append(w);
      } else {
        el.append(piece);
      }
    }
  }

  const tipInfo = new WeakMap(); // .tok span -> lines for the hover card

  // tokens: {ids, offsets (UTF-16), strings?, bytes?, special(i)->literal|null, assistant(i)->bool}
  function renderTokens(viewer, text, t) {
    const groups = buildGroups(t.offsets);
    const frag = document.createDocumentFragment();
    let cursor = 0;
    const gap = (from, to) => {
      if (to <= from) return;
      const span = document.createElement("span");
      span.className = "gap";
      span.title = "not covered by any token";
      appendText(span, text.slice(from, to));
      frag.append(span);
    };
    const at = byteIndex(text);
    groups.forEach((g, n) => {
      if (g.start > cursor) gap(cursor, g.start);
      const span = document.createElement("span");
      const classes = ["tok", `c${n % COLOURS}`];
      if (g.inserted) classes.push("inserted");
      if (g.members.length > 1) classes.push("multi");
      const specials = g.members.map((i) => t.special(i)).filter((x) => x !== null);
      if (specials.length) classes.push("special");
      if (g.members.some((i) => t.assistant(i))) classes.push("assistant");
      span.className = classes.join(" ");
      span.dataset.start = String(g.start);
      span.dataset.end = String(g.end);
      span.dataset.ids = g.members.map((i) => t.ids[i]).join(",");
      span.dataset.index = String(g.members[0]);
      if (g.members.length > 1) span.dataset.count = String(g.members.length);
      if (g.inserted) span.dataset.label = t.strings ? g.members.map((i) => t.strings[i]).join("") : "inserted";
      // Overlapping groups cannot go backwards; a token before the cursor only re-covers text.
      const from = Math.max(g.start, cursor);
      appendText(span, text.slice(from, g.end));
      if (from !== g.start) span.dataset.start = String(from);
      frag.append(span);
      cursor = Math.max(cursor, g.end);
      tipInfo.set(span, describeGroup(text, g, t, at));
    });
    gap(cursor, text.length);
    viewer.replaceChildren(frag);
    viewer.textSource = text;
    return groups;
  }

  function describeGroup(text, g, t, at) {
    const lines = [];
    if (g.members.length > 1) {
      lines.push({ head: `${g.members.length} tokens share ${codePoints(text.slice(g.start, g.end))} character(s)` });
      lines.push({ text: `bytes of the shared text: ${hex(utf8.encode(text.slice(g.start, g.end)))}` });
    }
    for (const i of g.members) {
      const [s, e] = t.offsets[i];
      const special = t.special(i);
      lines.push({ head: `token #${i}   id ${t.ids[i]}${special !== null ? "   special" : ""}${t.assistant(i) ? "   assistant" : ""}` });
      lines.push({ text: `offsets [${s}, ${e}) UTF-16 · covers text bytes [${at[s]}, ${at[e]})` });
      if (t.bytes && t.bytes[i]) lines.push({ text: `bytes ${hex(t.bytes[i])} (${t.bytes[i].length})` });
      else if (t.strings && !t.strings[i].includes("\ufffd")) lines.push({ text: `bytes ${hex(utf8.encode(t.strings[i]))}` });
      else if (t.strings) lines.push({ text: "bytes: not recoverable from the text" });
      const shown = t.strings ? t.strings[i] : text.slice(s, e);
      lines.push({ text: `text ${JSON.stringify(shown)}` });
    }
    return lines;
  }

  // ---------------------------------------------------------------- hover card
  function setupTip() {
    const tip = $("#tip");
    let current = null;
    document.addEventListener("mouseover", (ev) => {
      const span = ev.target.closest && ev.target.closest(".viewer .tok");
      if (!span || span === current) return;
      current = span;
      const lines = tipInfo.get(span) || [];
      tip.replaceChildren(...lines.map((l) => {
        const div = document.createElement("div");
        if (l.head) { div.className = "head"; div.textContent = l.head; } else div.textContent = l.text;
        return div;
      }));
      tip.hidden = false;
      span.classList.add("hover");
    });
    document.addEventListener("mouseout", (ev) => {
      if (!current || (ev.relatedTarget && current.contains(ev.relatedTarget))) return;
      current.classList.remove("hover");
      current = null;
      tip.hidden = true;
    });
    document.addEventListener("mousemove", (ev) => {
      if (tip.hidden) return;
      const pad = 14;
      const x = Math.min(ev.clientX + pad, window.innerWidth - tip.offsetWidth - 4);
      const y = ev.clientY + pad + tip.offsetHeight > window.innerHeight
        ? ev.clientY - pad - tip.offsetHeight : ev.clientY + pad;
      tip.style.left = `${Math.max(4, x)}px`;
      tip.style.top = `${Math.max(4, y)}px`;
    });
  }

  // ---------------------------------------------------------------- tokenizers
  const catalog = { list: [], byRef: new Map(), default: null };

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

  function specialsOf(ref) {
    const entry = catalog.byRef.get(ref);
    const byId = new Map();
    if (entry) for (const [literal, id] of Object.entries(entry.special_tokens || {})) byId.set(id, literal);
    return byId;
  }

  function setMeta(refEl, hashEl, data) {
    refEl.textContent = data ? data.tokenizer : "–";
    hashEl.textContent = data ? data.tokenizer_hash : "–";
    hashEl.title = data ? data.tokenizer_hash : "";
  }

  // ---------------------------------------------------------------- text mode
  function encodeBody(tokenizer, text) {
    return {
      tokenizer, text,
      special_tokens: $("#special-policy").value,
      add_special_tokens: $("#add-special").checked,
      return_offsets: true, offset_units: "utf16", return_tokens: true,
    };
  }

  // Encodes `text` with `tokenizer` into `viewer`; returns the response or null.
  async function encodeInto(chan, viewer, errorBox, tokenizer, text) {
    viewer.dataset.status = "loading";
    const r = await chan((signal) => api("POST", "/encode", encodeBody(tokenizer, text), signal));
    if (r === null) return undefined; // superseded
    if (!r.ok) {
      showError(errorBox, r.error);
      viewer.replaceChildren();
      viewer.textSource = null;
      viewer.dataset.status = "error";
      return null;
    }
    showError(errorBox, null);
    const d = r.value;
    const specials = specialsOf(d.tokenizer);
    const groups = buildGroups(d.offsets);
    const bytes = recoverBytes(text, groups, d.tokens);
    renderTokens(viewer, text, {
      ids: d.ids, offsets: d.offsets, strings: d.tokens, bytes,
      special: (i) => {
        const lit = specials.get(d.ids[i]);
        return lit !== undefined && d.tokens[i] === lit ? lit : null;
      },
      assistant: () => false,
    });
    viewer.dataset.status = "ready";
    viewer.dataset.count = String(d.count);
    return d;
  }

  const textChan = channel();
  async function runText() {
    const text = $("#input").value;
    const d = await encodeInto(textChan, $("#viewer"), $("#text-error"), $("#tokenizer").value, text);
    if (d === undefined) return;
    const chars = codePoints(text);
    $("#char-count").textContent = String(chars);
    $("#char-count").title = `${chars} code points · ${text.length} UTF-16 units · ${utf8.encode(text).length} UTF-8 bytes`;
    $("#token-count").textContent = d ? String(d.count) : "–";
    $("#cpt").textContent = d && d.count ? (chars / d.count).toFixed(2) : "–";
    setMeta($("#tok-ref"), $("#tok-hash"), d);
    $("#ids").value = d ? JSON.stringify(d.ids) : "";
    $("#copy-status").textContent = "";
  }

  async function copyIds() {
    const ids = $("#ids");
    try {
      await navigator.clipboard.writeText(ids.value);
    } catch (_) { // clipboard API unavailable (e.g. not a secure context)
      ids.select();
      document.execCommand("copy");
    }
    $("#copy-status").textContent = "copied";
  }

  // ---------------------------------------------------------------- compare mode
  const cmpChans = { a: channel(), b: channel() };
  async function runCompare() {
    const text = $("#input").value;
    const results = await Promise.all(["a", "b"].map(async (side) => {
      const pane = $(`#pane-${side}`);
      const d = await encodeInto(cmpChans[side], $(`#cmp-${side}-viewer`), $(".error", pane),
        $(`#cmp-${side}-tokenizer`).value, text);
      if (d === undefined) return undefined;
      $(`#cmp-${side}-count`).textContent = d ? String(d.count) : "–";
      setMeta($(".ref", pane), $(".hash", pane), d);
      return d;
    }));
    if (results.includes(undefined)) return;
    const [a, b] = results;
    const summary = $("#cmp-summary");
    if (!a || !b) { summary.textContent = ""; return; }
    const diff = b.count - a.count;
    const pct = a.count ? ` (${diff >= 0 ? "+" : ""}${((diff / a.count) * 100).toFixed(1)}%)` : "";
    summary.textContent = diff === 0
      ? `Both use ${a.count} tokens for ${codePoints(text)} characters.`
      : `${b.tokenizer} uses ${Math.abs(diff)} ${diff > 0 ? "more" : "fewer"} tokens than ${a.tokenizer}${pct}.`;
  }

  // ---------------------------------------------------------------- chat mode
  const DEFAULT_MESSAGES = [
    { role: "system", content: "You are a concise assistant." },
    { role: "user", content: "Say hello in Japanese, with an emoji 👋🏽" },
    { role: "assistant", content: "こんにちは 👋🏽 (konnichiwa)" },
  ];

  function addMessage(role, content) {
    const li = $("#message-template").content.firstElementChild.cloneNode(true);
    tabInserts($(".content", li));
    $(".role", li).value = role;
    $(".content", li).value = content;
    $("#messages").append(li);
    return li;
  }

  function readMessages() {
    return Array.from($("#messages").children, (li) => ({
      role: $(".role", li).value,
      content: $(".content", li).value,
    }));
  }

  function fillTemplates() {
    const entry = catalog.byRef.get($("#chat-tokenizer").value);
    const select = $("#chat-template");
    const names = entry ? Object.keys(entry.chat_templates || {}) : [];
    const keep = select.value;
    select.replaceChildren(...names.map((n) => {
      const opt = document.createElement("option");
      opt.value = n;
      opt.textContent = n;
      return opt;
    }));
    const preferred = entry && entry.default_chat_template;
    select.value = names.includes(keep) ? keep : names.includes(preferred) ? preferred : (names[0] || "");
  }

  const chatChan = channel();
  async function runChat() {
    const viewer = $("#chat-viewer");
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
    };
    if ($("#chat-template").value) body.template = $("#chat-template").value;
    viewer.dataset.status = "loading";
    const r = await chatChan((signal) => api("POST", "/render_chat", body, signal));
    if (r === null) return;
    if (!r.ok) {
      showError($("#chat-error"), r.error);
      viewer.replaceChildren();
      viewer.textSource = null;
      viewer.dataset.status = "error";
      $("#chat-count").textContent = "–";
      $("#chat-assistant-count").textContent = "–";
      return;
    }
    showError($("#chat-error"), null);
    const d = r.value;
    const map = cpToUtf16(d.text);
    const offsets = d.offsets.map(([s, e]) => [map[s], map[e]]);
    const specials = specialsOf(d.tokenizer);
    const labels = d.labels || [];
    renderTokens(viewer, d.text, {
      ids: d.ids, offsets, strings: null, bytes: null,
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
    setMeta($("#chat-ref"), $("#chat-hash"), d);
    $("#chat-template-hash").textContent = d.template_hash || "–";
    $("#chat-template-hash").title = d.template_hash || "";
  }

  // ---------------------------------------------------------------- modes and wiring
  const MODES = ["text", "compare", "chat"];
  let mode = "text";
  const runners = { text: runText, compare: runCompare, chat: runChat };
  const schedule = {
    text: debounced(() => runText()),
    compare: debounced(() => runCompare()),
    chat: debounced(() => runChat()),
  };

  function setMode(next) {
    mode = MODES.includes(next) ? next : "text";
    document.body.dataset.mode = mode;
    for (const m of MODES) {
      $(`#mode-${m}`).hidden = m !== mode;
      $(`#tab-${m}`).setAttribute("aria-selected", String(m === mode));
    }
    $("#text-input-section").hidden = mode === "chat";
    if (location.hash.slice(1) !== mode) history.replaceState(null, "", `#${mode}`);
    runners[mode]();
  }

  // Tab in a text box types a tab (tokenizers care about tabs); Escape, then Tab, leaves it.
  function tabInserts(area) {
    let leaving = false;
    area.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") { leaving = true; return; }
      if (ev.key !== "Tab" || ev.shiftKey || ev.ctrlKey || ev.altKey || ev.metaKey || leaving) {
        leaving = false;
        return;
      }
      ev.preventDefault();
      if (!document.execCommand("insertText", false, "\t")) { // keeps undo; fires "input"
        area.setRangeText("\t", area.selectionStart, area.selectionEnd, "end");
        area.dispatchEvent(new Event("input", { bubbles: true }));
      }
    });
  }

  function wire() {
    for (const m of MODES) $(`#tab-${m}`).addEventListener("click", () => setMode(m));
    window.addEventListener("hashchange", () => setMode(location.hash.slice(1)));
    const rerunInput = () => schedule[mode === "chat" ? "text" : mode]();
    $("#input").addEventListener("input", rerunInput);
    tabInserts($("#input"));
    for (const id of ["#tokenizer", "#special-policy", "#add-special"]) {
      $(id).addEventListener("change", () => runners[mode === "chat" ? "text" : mode]());
    }
    for (const id of ["#cmp-a-tokenizer", "#cmp-b-tokenizer"]) $(id).addEventListener("change", () => runCompare());
    $("#show-ws").addEventListener("change", (ev) => document.body.classList.toggle("show-ws", ev.target.checked));
    document.body.classList.toggle("show-ws", $("#show-ws").checked);
    $("#copy-ids").addEventListener("click", copyIds);
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
      sessionStorage.setItem("tokserve-token", ev.target.value);
      loadTokenizers();
    });
    for (const m of DEFAULT_MESSAGES) addMessage(m.role, m.content);
  }

  async function loadTokenizers() {
    let data;
    try {
      data = await api("GET", "/tokenizers");
    } catch (e) {
      showError($("#global-error"), e);
      return;
    }
    showError($("#global-error"), null);
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
    fillTemplates();
    setMode(location.hash.slice(1));
  }

  document.addEventListener("DOMContentLoaded", () => {
    setupTip();
    wire();
    loadTokenizers();
  });
})();

// tokserve playground: the reference client of the service's own offsets.
//
// Every coloured span in a viewer is a slice of the ORIGINAL text taken with the offsets the
// server returned (UTF-16 code units, so `text.slice(start, end)` is exact in JS). Nothing
// is re-tokenized or guessed here: if the server's offsets were off by one, the page would
// show it. Invariants kept by TokenView:
//   * the viewer's textContent is exactly the text (markers are CSS pseudo-elements), from
//     the moment it is shown: chunks not drawn yet hold the same text as plain text;
//   * every .tok span's textContent is text.slice(data-start, data-end);
//   * tokens whose offsets overlap (pieces of one multi-byte character) are one span
//     (class "multi", data-count = how many tokens share it);
//   * the ids view's textContent is the ids as a JSON list; hovering a token lights up its
//     id(s) and hovering an id lights up its token.
// Large texts: the viewer is drawn chunk by chunk as chunks come into view (see
// CHUNK_CHARS), so 300k characters show within 2 s and frames keep being painted while
// they do (tests/browser/test_playground_scale.py measures both).
// The page state (mode, tokenizer(s), options, text or messages) is kept in the URL
// fragment: the address bar is a share link ("share links" below).
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
    const map = new Uint32Array(codePoints(text) + 1);
    let u = 0, k = 0;
    for (const ch of text) { u += ch.length; map[++k] = u; }
    return map;
  }

  const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(" ");

  // The bytes of each member of one group, recovered from the text: the members partition
  // the UTF-8 bytes of the characters the group covers, and each member's bytes decode (with
  // replacement, as the server's `tokens` were made) to its token string. A small search
  // finds that partition; null where it cannot be recovered (e.g. a normalizing tokenizer).
  function recoverGroupBytes(textBytes, at, start, end, members, tokens) {
    const lo = at[start], hi = at[end];
    const k = members.length;
    if (hi - lo > 4096) return null;
    const dead = new Set();
    const cuts = [];
    const search = (m, pos) => {
      if (m === k) return pos === hi;
      const key = m * 8192 + (pos - lo);
      if (dead.has(key)) return false;
      const want = tokens[members[m]];
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
    if (!search(0, lo)) return null;
    let pos = lo;
    return members.map((_, m) => { const b = textBytes.slice(pos, cuts[m]); pos = cuts[m]; return b; });
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

  // Tokens that overlap (share a character) are one group; zero-width tokens (inserted
  // BOS/EOS) are groups of their own. A group's members are consecutive token indices.
  // Returned as typed arrays (a 300k-character text has ~100k tokens).
  function buildGroups(offsets) {
    const n = offsets.length;
    const start = new Int32Array(n), end = new Int32Array(n), first = new Int32Array(n);
    const size = new Int32Array(n), inserted = new Uint8Array(n), ofToken = new Int32Array(n);
    let g = -1;
    let open = false; // may the last group still grow?
    for (let i = 0; i < n; i++) {
      const s = offsets[i][0], e = offsets[i][1];
      if (s === e) {
        g++;
        start[g] = s; end[g] = e; first[g] = i; size[g] = 1; inserted[g] = 1;
        open = false;
      } else if (open && s < end[g]) {
        size[g]++;
        if (s < start[g]) start[g] = s;
        if (e > end[g]) end[g] = e;
      } else {
        g++;
        start[g] = s; end[g] = e; first[g] = i; size[g] = 1;
        open = true;
      }
      ofToken[i] = g;
    }
    return { count: g + 1, start, end, first, size, inserted, ofToken };
  }

  // The viewer is split into chunks of about CHUNK_CHARS characters, cut after a group that
  // ends a line (so the seams are invisible: each chunk is a block that starts a line), or
  // at any group boundary once a chunk reaches CHUNK_MAX without a line end (a rare seam: a
  // long wrapped line breaks early there). A chunk starts as one plain text node and is
  // drawn with token spans when it comes within VIEW_MARGIN of the viewer's visible area; `content-visibility: auto` keeps the browser
  // from laying out chunks nobody looks at. The viewer's textContent is the text from the
  // start, so the page's find, select and copy see all of it.
  const CHUNK_CHARS = 1024;
  const CHUNK_MAX = 4096;
  const EAGER_CHARS = 2048;   // drawn at once by show(): about what the first screen holds
  const IDS_PER_CHUNK = 500;  // the ids view is chunked the same way, by token index
  const VIEW_MARGIN = "300px 0px";

  function chunkText(text, groups) {
    const chunks = [];
    const from = new Int32Array(groups.count); // where each group's drawn text starts
    let cursor = 0, cStart = 0, cG0 = 0;
    for (let g = 0; g < groups.count; g++) {
      // Overlapping groups cannot go backwards; a token before the cursor only re-covers text.
      from[g] = Math.max(groups.start[g], cursor);
      cursor = Math.max(cursor, groups.end[g]);
      const len = cursor - cStart;
      if ((len >= CHUNK_CHARS && text.charCodeAt(cursor - 1) === 10) || len >= CHUNK_MAX) {
        chunks.push({ g0: cG0, g1: g + 1, start: cStart, end: cursor, spans: null, el: null });
        cStart = cursor;
        cG0 = g + 1;
      }
    }
    if (cG0 < groups.count || cStart < text.length) {
      chunks.push({ g0: cG0, g1: groups.count, start: cStart, end: text.length, spans: null, el: null });
    }
    return { chunks, from };
  }

  // Estimated height of `text` in a box `cols` monospace cells wide (before it is laid out).
  function estimateLines(text, start, end, cols) {
    let lines = 0;
    for (let p = start; p < end;) {
      let nl = text.indexOf("\n", p);
      if (nl < 0 || nl >= end) nl = end;
      lines += Math.max(1, Math.ceil((nl - p) / cols));
      p = nl + 1;
    }
    return Math.max(1, lines);
  }

  // Monospace cell width and line height of a box, from its computed font (no layout), and
  // its content width as a ResizeObserver reports it, so show() never forces a layout to
  // estimate chunk heights.
  class BoxMetrics {
    constructor(box) {
      const cs = getComputedStyle(box);
      const ctx = document.createElement("canvas").getContext("2d");
      ctx.font = `${cs.fontSize} ${cs.fontFamily}`;
      this.cell = ctx.measureText("0".repeat(50)).width / 50 || 9;
      this.lineHeight = parseFloat(cs.lineHeight) || 28;
      this.width = 0;
      new ResizeObserver((es) => { this.width = es[es.length - 1].contentRect.width; }).observe(box);
    }

    get cols() { // less a chunk's inline padding (playground.css, .chunk)
      return this.width > 0 ? Math.max(10, Math.floor((this.width - 6) / this.cell)) : 100;
    }
  }

  // Scrolls `box` (only that box, never the page) so `el` is in its visible area.
  function reveal(box, el) {
    const b = box.getBoundingClientRect();
    const r = el.getBoundingClientRect();
    if (r.top >= b.top && r.bottom <= b.bottom) return;
    box.scrollTop += r.top - b.top - (box.clientHeight - r.height) / 2;
  }

  // One token viewer (and, in text and chat mode, its ids view): hovering a token lights up
  // its id(s), hovering an id lights up its token, each scrolled into view in its own box.
  class TokenView {
    constructor(viewer, idsBox = null) {
      this.viewer = viewer;
      this.idsBox = idsBox;
      viewer.tokenView = this;
      if (idsBox) idsBox.tokenView = this;
      this.io = new IntersectionObserver((es) => this.onNear(es, false), { root: viewer, rootMargin: VIEW_MARGIN });
      this.idsIo = idsBox && new IntersectionObserver((es) => this.onNear(es, true), { root: idsBox, rootMargin: VIEW_MARGIN });
      this.data = null;
      this.lit = [];
      this.metrics = new BoxMetrics(viewer);
      this.idsMetrics = idsBox && new BoxMetrics(idsBox);
    }

    clear() {
      this.clearHover();
      this.io.disconnect();
      if (this.idsIo) this.idsIo.disconnect();
      this.data = null;
      this.viewer.replaceChildren();
      this.viewer.textSource = null;
      if (this.idsBox) this.idsBox.replaceChildren();
    }

    // t: {ids, offsets (UTF-16), strings?, special(i)->literal|null, assistant(i)->bool}
    show(text, t) {
      this.clearHover();
      this.io.disconnect();
      if (this.idsIo) this.idsIo.disconnect();
      const groups = buildGroups(t.offsets);
      const { chunks, from } = chunkText(text, groups);
      this.data = { text, t, groups, from, chunks, idChunks: [], textBytes: null, byteAt: null };

      const m = this.metrics;
      const cols = m.cols;
      const frag = document.createDocumentFragment();
      chunks.forEach((c, k) => {
        const el = document.createElement("div");
        el.className = "chunk";
        el.dataset.k = String(k);
        el.textContent = text.slice(c.start, c.end);
        const h = estimateLines(text, c.start, c.end, cols) * m.lineHeight;
        el.style.containIntrinsicBlockSize = `auto ${Math.ceil(h)}px`;
        c.el = el;
        frag.append(el);
      });
      this.viewer.replaceChildren(frag);
      this.viewer.textSource = text;
      let eager = 0;
      for (const c of chunks) {
        if (eager >= EAGER_CHARS) this.io.observe(c.el);
        else this.upgrade(c);
        eager += c.end - c.start;
      }
      if (this.idsBox) this.showIds(t.ids);
    }

    showIds(ids) {
      const box = this.idsBox;
      const m = this.idsMetrics;
      const cols = m.cols;
      const frag = document.createDocumentFragment();
      const n = Math.max(1, Math.ceil(ids.length / IDS_PER_CHUNK));
      for (let k = 0; k < n; k++) {
        const i0 = k * IDS_PER_CHUNK, i1 = Math.min(ids.length, i0 + IDS_PER_CHUNK);
        const c = { i0, i1, last: k === n - 1, spans: null, el: document.createElement("div") };
        c.el.className = "chunk";
        c.el.dataset.k = String(k);
        const s = (k === 0 ? "[" : "") + ids.slice(i0, i1).join(", ") + (c.last ? "]" : ", ");
        c.el.textContent = s;
        c.el.style.containIntrinsicBlockSize = `auto ${Math.ceil(Math.ceil(s.length / cols) * m.lineHeight)}px`;
        this.data.idChunks.push(c);
        frag.append(c.el);
      }
      box.replaceChildren(frag);
      this.data.idChunks.forEach((c, k) => { if (k < 2) this.upgradeIds(c); else this.idsIo.observe(c.el); });
    }

    onNear(entries, ids) {
      if (!this.data) return;
      for (const e of entries) {
        if (!e.isIntersecting) continue;
        const k = Number(e.target.dataset.k);
        const list = ids ? this.data.idChunks : this.data.chunks;
        if (list[k] && list[k].el === e.target) {
          if (ids) this.upgradeIds(list[k]); else this.upgrade(list[k]);
        }
      }
    }

    // Draws chunk `c` with one span per group (and per gap: text no token covers).
    upgrade(c) {
      if (c.spans) return;
      const { text, t, groups, from } = this.data;
      const frag = document.createDocumentFragment();
      const spans = new Array(c.g1 - c.g0);
      let cursor = c.start;
      const gap = (a, b) => {
        if (b <= a) return;
        const span = document.createElement("span");
        span.className = "gap";
        span.title = "not covered by any token";
        appendText(span, text.slice(a, b));
        frag.append(span);
      };
      for (let g = c.g0; g < c.g1; g++) {
        const start = groups.start[g], end = groups.end[g];
        const first = groups.first[g], size = groups.size[g];
        if (start > cursor) gap(cursor, start);
        const span = document.createElement("span");
        let cls = `tok c${g % COLOURS}`;
        if (groups.inserted[g]) cls += " inserted";
        if (size > 1) cls += " multi";
        let special = false, assistant = false;
        const ids = [];
        for (let i = first; i < first + size; i++) {
          if (t.special(i) !== null) special = true;
          if (t.assistant(i)) assistant = true;
          ids.push(t.ids[i]);
        }
        if (special) cls += " special";
        if (assistant) cls += " assistant";
        span.className = cls;
        span.dataset.g = String(g);
        span.dataset.start = String(from[g]);
        span.dataset.end = String(end);
        span.dataset.ids = ids.join(",");
        span.dataset.index = String(first);
        if (size > 1) span.dataset.count = String(size);
        if (groups.inserted[g]) {
          span.dataset.label = t.strings ? t.strings.slice(first, first + size).join("") : "inserted";
        }
        appendText(span, text.slice(from[g], end));
        frag.append(span);
        spans[g - c.g0] = span;
        cursor = Math.max(cursor, end);
      }
      gap(cursor, c.end);
      c.el.replaceChildren(frag);
      c.el.dataset.drawn = "";
      c.spans = spans;
      this.io.unobserve(c.el);
    }

    upgradeIds(c) {
      if (c.spans) return;
      const ids = this.data.t.ids;
      const frag = document.createDocumentFragment();
      const spans = new Array(c.i1 - c.i0);
      if (c.i0 === 0) frag.append("[");
      for (let i = c.i0; i < c.i1; i++) {
        const span = document.createElement("span");
        span.className = "id";
        span.dataset.i = String(i);
        span.textContent = String(ids[i]);
        frag.append(span);
        if (i < ids.length - 1) frag.append(", ");
        spans[i - c.i0] = span;
      }
      if (c.last) frag.append("]");
      c.el.replaceChildren(frag);
      c.el.dataset.drawn = "";
      c.spans = spans;
      this.idsIo.unobserve(c.el);
    }

    // The span of group g (drawing its chunk first if needed).
    groupSpan(g) {
      const chunks = this.data.chunks;
      let lo = 0, hi = chunks.length - 1;
      while (lo < hi) { // last chunk with g0 <= g
        const mid = (lo + hi + 1) >> 1;
        if (chunks[mid].g0 <= g) lo = mid; else hi = mid - 1;
      }
      const c = chunks[lo];
      this.upgrade(c);
      return c.spans[g - c.g0];
    }

    idSpan(i) {
      const c = this.data.idChunks[Math.floor(i / IDS_PER_CHUNK)];
      this.upgradeIds(c);
      return c.spans[i - c.i0];
    }

    groupOfToken(i) { return this.data.groups.ofToken[i]; }

    // Lights up group g in the text and its ids; `from` is where the mouse is ("text" or
    // "ids"), and the other box scrolls to show what lit up. Returns the hover card's lines.
    hover(g, from) {
      this.clearHover();
      const { groups } = this.data;
      const span = this.groupSpan(g);
      span.classList.add("hover");
      this.lit.push(span);
      if (this.idsBox) {
        for (let i = groups.first[g]; i < groups.first[g] + groups.size[g]; i++) {
          const el = this.idSpan(i);
          el.classList.add("hover");
          this.lit.push(el);
        }
      }
      const other = from === "ids" ? [this.viewer, span] : this.idsBox ? [this.idsBox, this.lit[1]] : null;
      if (other) {
        reveal(...other);
        // Chunks drawn by that scroll may settle to heights other than their estimate.
        requestAnimationFrame(() => { if (this.lit.includes(other[1])) reveal(...other); });
      }
      return this.describe(g);
    }

    clearHover() {
      for (const el of this.lit) el.classList.remove("hover");
      this.lit = [];
    }

    describe(g) {
      const d = this.data;
      const { text, t, groups } = d;
      if (!d.byteAt) d.byteAt = byteIndex(text);
      const at = d.byteAt;
      const start = groups.start[g], end = groups.end[g];
      const members = [];
      for (let i = groups.first[g]; i < groups.first[g] + groups.size[g]; i++) members.push(i);
      let bytes = null;
      if (t.strings) {
        if (groups.inserted[g]) bytes = members.map((i) => utf8.encode(t.strings[i]));
        else {
          if (!d.textBytes) d.textBytes = utf8.encode(text);
          bytes = recoverGroupBytes(d.textBytes, at, start, end, members, t.strings);
        }
      }
      const lines = [];
      if (members.length > 1) {
        lines.push({ head: `${members.length} tokens share ${codePoints(text.slice(start, end))} character(s)` });
        lines.push({ text: `bytes of the shared text: ${hex(utf8.encode(text.slice(start, end)))}` });
      }
      members.forEach((i, m) => {
        const [s, e] = t.offsets[i];
        const special = t.special(i);
        lines.push({ head: `token #${i}   id ${t.ids[i]}${special !== null ? "   special" : ""}${t.assistant(i) ? "   assistant" : ""}` });
        lines.push({ text: `offsets [${s}, ${e}) UTF-16 · covers text bytes [${at[s]}, ${at[e]})` });
        if (bytes) lines.push({ text: `bytes ${hex(bytes[m])} (${bytes[m].length})` });
        else if (t.strings && !t.strings[i].includes("\ufffd")) lines.push({ text: `bytes ${hex(utf8.encode(t.strings[i]))}` });
        else if (t.strings) lines.push({ text: "bytes: not recoverable from the text" });
        const shown = t.strings ? t.strings[i] : text.slice(s, e);
        lines.push({ text: `text ${JSON.stringify(shown)}` });
      });
      return lines;
    }
  }

  // ---------------------------------------------------------------- hover
  // One listener for every view: over a token (.tok in a viewer) or an id (.id in an ids
  // view), the view lights up both and the card shows the group's ids, offsets and bytes.
  function setupHover() {
    const tip = $("#tip");
    let current = null; // { view, el, above }
    const leave = () => {
      if (!current) return;
      current.view.clearHover();
      current = null;
      tip.hidden = true;
    };
    document.addEventListener("mouseover", (ev) => {
      const el = ev.target.closest && ev.target.closest(".tok, .id");
      const box = el && el.closest(".viewer, .ids");
      const view = box && box.tokenView;
      if (!view || !view.data || (current && current.el === el)) return;
      leave();
      const fromIds = el.classList.contains("id");
      const g = fromIds ? view.groupOfToken(Number(el.dataset.i)) : Number(el.dataset.g);
      const lines = view.hover(g, fromIds ? "ids" : "text");
      // The card goes on the side away from the other box (ids are below the text), so it
      // does not hide what lit up.
      current = { view, el, above: !fromIds };
      tip.replaceChildren(...lines.map((l) => {
        const div = document.createElement("div");
        if (l.head) { div.className = "head"; div.textContent = l.head; } else div.textContent = l.text;
        return div;
      }));
      tip.hidden = false;
    });
    document.addEventListener("mouseout", (ev) => {
      if (!current || (ev.relatedTarget && current.el.contains(ev.relatedTarget))) return;
      leave();
    });
    document.addEventListener("mousemove", (ev) => {
      if (tip.hidden) return;
      const pad = 14;
      const x = Math.min(ev.clientX + pad, window.innerWidth - tip.offsetWidth - 4);
      const up = ev.clientY - pad - tip.offsetHeight;
      const down = ev.clientY + pad;
      const fitsUp = up >= 4, fitsDown = down + tip.offsetHeight <= window.innerHeight;
      const y = current && current.above ? (fitsUp || !fitsDown ? up : down) : (fitsDown || !fitsUp ? down : up);
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

  const views = {}; // name -> TokenView (made in wire())

  // ---------------------------------------------------------------- text mode
  function encodeBody(tokenizer, text) {
    return {
      tokenizer, text,
      special_tokens: $("#special-policy").value,
      add_special_tokens: $("#add-special").checked,
      return_offsets: true, offset_units: "utf16", return_tokens: true,
    };
  }

  // Encodes `text` with `tokenizer` into `view`; returns the response, null on an error,
  // undefined when superseded by a newer request.
  async function encodeInto(chan, view, errorBox, tokenizer, text) {
    const viewer = view.viewer;
    viewer.dataset.status = "loading";
    const r = await chan((signal) => api("POST", "/encode", encodeBody(tokenizer, text), signal));
    if (r === null) return undefined; // superseded
    if (!r.ok) {
      showError(errorBox, r.error);
      view.clear();
      viewer.dataset.status = "error";
      return null;
    }
    showError(errorBox, null);
    const d = r.value;
    const specials = specialsOf(d.tokenizer);
    view.show(text, {
      ids: d.ids, offsets: d.offsets, strings: d.tokens,
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
    const d = await encodeInto(textChan, views.text, $("#text-error"), $("#tokenizer").value, text);
    if (d === undefined) return;
    const chars = codePoints(text);
    $("#char-count").textContent = String(chars);
    $("#char-count").title = `${chars} code points · ${text.length} UTF-16 units · ${utf8.encode(text).length} UTF-8 bytes`;
    $("#token-count").textContent = d ? String(d.count) : "–";
    $("#cpt").textContent = d && d.count ? (chars / d.count).toFixed(2) : "–";
    setMeta($("#tok-ref"), $("#tok-hash"), d);
    $("#copy-status").textContent = "";
    syncLink();
  }

  // Copies `text` to the clipboard (a hidden text box and execCommand where the clipboard
  // API is not available, e.g. outside a secure context).
  async function copyText(text) {
    try {
      await navigator.clipboard.writeText(text);
    } catch (_) {
      const area = document.createElement("textarea");
      area.value = text;
      area.style.cssText = "position:fixed;opacity:0";
      document.body.append(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
  }

  // The ids as a JSON list, as the API returned them.
  async function copyIds(view, status) {
    await copyText(view.data ? JSON.stringify(view.data.t.ids) : "[]");
    status.textContent = "copied";
  }

  // ---------------------------------------------------------------- compare mode
  const cmpChans = { a: channel(), b: channel() };
  async function runCompare() {
    const text = $("#input").value;
    const results = await Promise.all(["a", "b"].map(async (side) => {
      const pane = $(`#pane-${side}`);
      const d = await encodeInto(cmpChans[side], views[side], $(".error", pane),
        $(`#cmp-${side}-tokenizer`).value, text);
      if (d === undefined) return undefined;
      $(`#cmp-${side}-count`).textContent = d ? String(d.count) : "–";
      setMeta($(".ref", pane), $(".hash", pane), d);
      return d;
    }));
    if (results.includes(undefined)) return;
    syncLink();
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

  function setMessages(list) {
    $("#messages").replaceChildren();
    for (const m of list) addMessage(m.role, m.content);
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

  // Each message's own token count (the API's message_counts: the tokens that overlap that
  // message's strings in the rendered prompt), shown on its row; "–" when unknown.
  function showMessageCounts(d) {
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

  const chatChan = channel();
  async function runChat() {
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

  // ---------------------------------------------------------------- share links
  // The page state lives in the URL fragment (never sent to the server), kept up to date
  // after every run, so the address bar is always a link to what the page shows:
  //   #mode=text&tokenizer=o200k_base%401&special=reject&bos=0&text=Hello
  //   #mode=compare&a=…&b=…&special=…&bos=…&text=…
  //   #mode=chat&tokenizer=…&template=…&literals=…&genprompt=0&messages=[{"role":…}]
  // plus ws=0 when whitespace is not shown. A payload (the text, or the messages as JSON)
  // longer than LINK_INLINE_MAX once URL-encoded is stored deflated, base64url, under
  // textz= / messagesz= (300k characters of prose: a link of ~100 kB). A bare "#chat" (the
  // old form: the mode only) still opens that mode with the defaults.
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

  let linkSeq = 0;
  let linkDone = Promise.resolve();
  function syncLink() {
    const mine = ++linkSeq;
    setBusy(1);
    linkDone = linkFragment().then((fragment) => {
      if (mine === linkSeq && location.hash.slice(1) !== fragment) history.replaceState(null, "", `#${fragment}`);
    }).catch((e) => {
      showError($("#global-error"), `could not write the page state into the link (${e.message})`);
    }).finally(() => setBusy(-1));
    return linkDone;
  }

  async function copyLink() {
    syncLink();
    await linkDone;
    await copyText(location.href);
    $("#share-status").textContent = "link copied";
  }

  // A served tokenizer for `ref` ("name@version", or a bare name: its newest served
  // version) among `select`'s options, or null.
  function resolveRef(select, ref) {
    const refs = Array.from(select.options, (o) => o.value);
    if (refs.includes(ref)) return ref;
    const named = refs.filter((r) => r.split("@")[0] === ref);
    return named.length ? named[named.length - 1] : null;
  }

  // Puts the state in `fragment` (location.hash without "#") into the page; returns the mode.
  async function applyLink(fragment) {
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
    const rerunInput = () => schedule[mode === "chat" ? "text" : mode]();
    $("#input").addEventListener("input", rerunInput);
    tabInserts($("#input"));
    for (const id of ["#tokenizer", "#special-policy", "#add-special"]) {
      $(id).addEventListener("change", () => runners[mode === "chat" ? "text" : mode]());
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
      sessionStorage.setItem("tokserve-token", ev.target.value);
      loadTokenizers();
    });
    setMessages(DEFAULT_MESSAGES);
  }

  let linkApplied = false;
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
    // The link is read once (after a 401 and a token, this runs again: keep the edits).
    let next = mode;
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
})();

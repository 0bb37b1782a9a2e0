// One token viewer (and, in text and chat mode, its ids view), drawn virtually: show() puts
// the whole text in at once as plain-text chunks (so the viewer's textContent is exactly the
// text from the first moment, and the page's find, select and copy see all of it), draws the
// first screen's chunks with token spans, and draws the others as they come within
// VIEW_MARGIN of the visible area; `content-visibility: auto` keeps the browser from laying
// out chunks nobody looks at. Hovering a token lights up its id(s) and hovering an id lights
// up its token, each scrolled into view in its own box (hover.js finds the view and shows
// the card).
//
// Every coloured span is a slice of the ORIGINAL text taken with the offsets the server
// returned (UTF-16 code units, so `text.slice(start, end)` is exact in JS). Nothing is
// re-tokenized or guessed here: if the server's offsets were off by one, the page would
// show it.

import {
  BoxMetrics, EAGER_CHARS, IDS_PER_CHUNK, VIEW_MARGIN, buildGroups, chunkText, estimateLines,
} from "./chunks.js";
import { drawChunk, drawIds } from "./draw.js";

// Scrolls `box` (only that box, never the page) so `el` is in its visible area.
function reveal(box, el) {
  const b = box.getBoundingClientRect();
  const r = el.getBoundingClientRect();
  if (r.top >= b.top && r.bottom <= b.bottom) return;
  box.scrollTop += r.top - b.top - (box.clientHeight - r.height) / 2;
}

export class TokenView {
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

  // t: {ids, offsets (UTF-16), strings?, special(i)->literal|null, assistant(i)->bool,
  //     flagged?(i)->bool: part of a special-token literal shown as text (literals.js)}
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
    const { frag, spans } = drawChunk(this.data, c);
    c.el.replaceChildren(frag);
    c.el.dataset.drawn = "";
    c.spans = spans;
    this.io.unobserve(c.el);
  }

  upgradeIds(c) {
    if (c.spans) return;
    const { frag, spans } = drawIds(this.data.t.ids, c);
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
  // "ids"), and the other box scrolls to show what lit up.
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
  }

  clearHover() {
    for (const el of this.lit) el.classList.remove("hover");
    this.lit = [];
  }
}

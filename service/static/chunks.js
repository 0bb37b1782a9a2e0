// How a large text is cut for virtualized drawing: tokens grouped where they share
// characters, the groups cut into chunks of about CHUNK_CHARS characters, and each chunk's
// height estimated before it is laid out. Pure arithmetic and measuring, no drawing
// (token-view.js draws the chunks as they come into view).
//
// A chunk is cut after a group that ends a line (so the seams are invisible: each chunk is a
// block that starts a line), or at any group boundary once it reaches CHUNK_MAX without a
// line end (a rare seam: a long wrapped line breaks early there). This is what lets 300k
// characters show within 2 s while frames keep being painted
// (tests/browser/test_playground_scale.py measures both).

const CHUNK_CHARS = 1024;
const CHUNK_MAX = 4096;
export const EAGER_CHARS = 2048;   // drawn at once by show(): about what the first screen holds
export const IDS_PER_CHUNK = 500;  // the ids view is chunked the same way, by token index
export const VIEW_MARGIN = "300px 0px";

// Tokens that overlap (share a character) are one group; zero-width tokens (inserted
// BOS/EOS) are groups of their own. A group's members are consecutive token indices.
// Returned as typed arrays (a 300k-character text has ~100k tokens).
export function buildGroups(offsets) {
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

// The chunks ({g0, g1, start, end}: groups [g0, g1), text [start, end)) and where each
// group's drawn text starts (`from`).
export function chunkText(text, groups) {
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
export function estimateLines(text, start, end, cols) {
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
export class BoxMetrics {
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

// Rendering of token spans: one chunk of a viewer drawn as one span per group of tokens
// (plus one per gap, text no token covers), and one chunk of an ids view as one span per id.
// Invariants (the browser tests check them):
//   * every .tok span's textContent is text.slice(data-start, data-end), and the chunk's
//     textContent is unchanged by drawing: markers (whitespace symbols, group counts,
//     inserted-token labels) are CSS pseudo-elements, never text;
//   * tokens that share characters are one span (class "multi", data-count = how many);
//   * an ids chunk's textContent is its part of the ids as a JSON list.

const COLOURS = 8;
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

// Chunk `c` of a viewer (chunks.js) as {frag, spans}: spans[g - c.g0] is group g's span.
// `data` is a TokenView's: {text, t, groups, from}.
export function drawChunk(data, c) {
  const { text, t, groups, from } = data;
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
    let special = false, assistant = false, literal = false;
    const ids = [];
    for (let i = first; i < first + size; i++) {
      if (t.special(i) !== null) special = true;
      if (t.assistant(i)) assistant = true;
      if (t.flagged && t.flagged(i)) literal = true;
      ids.push(t.ids[i]);
    }
    if (special) cls += " special";
    if (assistant) cls += " assistant";
    if (literal) cls += " literal";
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
  return { frag, spans };
}

// Ids chunk `c` ({i0, i1, last}: token indices [i0, i1)) as {frag, spans}: spans[i - c.i0]
// is token i's id.
export function drawIds(ids, c) {
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
  return { frag, spans };
}

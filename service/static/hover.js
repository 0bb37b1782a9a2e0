// Hover linking: one listener for every view. Over a token (.tok in a viewer) or an id (.id
// in an ids view), the view (token-view.js) lights up both and the card (#tip) shows the
// group's ids, offsets and bytes, placed beside the pointer on the side away from what lit up.

import { $ } from "./dom.js";
import { byteIndex, codePoints, hex, recoverGroupBytes, utf8 } from "./unicode.js";

// The card's lines for group g: each member's index, id, offsets (UTF-16 and the UTF-8
// bytes they cover), its bytes and its text, and for a group of several tokens the
// characters they share. Lines are {head} or {text}. `d` is a TokenView's data ({text, t,
// groups}); the byte index and the text's bytes are computed on the first hover and kept in
// it (d.byteAt, d.textBytes).
function describeGroup(d, g) {
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
    const literal = t.flagged && t.flagged(i) ? "   literal shown as text" : "";
    lines.push({ head: `token #${i}   id ${t.ids[i]}${special !== null ? "   special" : ""}${t.assistant(i) ? "   assistant" : ""}${literal}` });
    lines.push({ text: `offsets [${s}, ${e}) UTF-16 · covers text bytes [${at[s]}, ${at[e]})` });
    if (bytes) lines.push({ text: `bytes ${hex(bytes[m])} (${bytes[m].length})` });
    else if (t.strings && !t.strings[i].includes("\ufffd")) lines.push({ text: `bytes ${hex(utf8.encode(t.strings[i]))}` });
    else if (t.strings) lines.push({ text: "bytes: not recoverable from the text" });
    const shown = t.strings ? t.strings[i] : text.slice(s, e);
    lines.push({ text: `text ${JSON.stringify(shown)}` });
  });
  return lines;
}

export function setupHover() {
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
    view.hover(g, fromIds ? "ids" : "text");
    const lines = describeGroup(view.data, g);
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

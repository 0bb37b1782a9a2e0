// Index arithmetic between the three ways a text is counted: UTF-16 code units (what JS
// strings and the page's offsets use), code points (/render_chat's offsets) and UTF-8 bytes
// (what tokens are made of), and the recovery of each token's bytes from the text.

export const utf8 = new TextEncoder();
const utf8Replace = new TextDecoder("utf-8", { ignoreBOM: true }); // like Python's "replace"

export const codePoints = (s) => { let n = 0; for (const _ of s) n++; return n; };

// UTF-16 index -> UTF-8 byte offset (a low surrogate maps to its pair's start).
export function byteIndex(text) {
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
export function cpToUtf16(text) {
  const map = new Uint32Array(codePoints(text) + 1);
  let u = 0, k = 0;
  for (const ch of text) { u += ch.length; map[++k] = u; }
  return map;
}

export const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(" ");

// The bytes of each member of one group, recovered from the text: the members partition
// the UTF-8 bytes of the characters the group covers, and each member's bytes decode (with
// replacement, as the server's `tokens` were made) to its token string. A small search
// finds that partition; null where it cannot be recovered (e.g. a normalizing tokenizer).
export function recoverGroupBytes(textBytes, at, start, end, members, tokens) {
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

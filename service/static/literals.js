// A text the API refuses under the default policy because it holds a special-token literal
// ("reject": 400 special_token_in_text; chat: 400 reserved_literal_in_content) is still
// shown: the page asks again with the literal read as plain characters (special_tokens
// "text"; chat: reserved_literals "escape"), marks the literal's tokens (class "literal")
// and says so in a notice beside the view, naming what the API answered.
//
// Why as text and not as its special id ("allow"): "reject" is the default because the text
// that reaches a tokenizer is mostly not the caller's own (a user's message, a web page), and
// a literal in it must not become a control token. Reading it as characters is what the API
// advises for such text and what OpenAI's API does with message content, so the view shows
// what a careful caller gets, and never a special id the text could only produce when
// trusted. "allow" is one choice away in the same select, and the notice says so.

import { ApiError } from "./api.js";

const REFUSALS = new Set(["special_token_in_text", "reserved_literal_in_content"]);

// Whether `error` is the API refusing a special-token literal under "reject".
export function refusesLiteral(error) {
  return error instanceof ApiError && REFUSALS.has(error.error.code);
}

// [start, end) UTF-16 ranges of every occurrence of each of `literals` in `text`, sorted.
export function literalRanges(text, literals) {
  const ranges = [];
  for (const lit of literals) {
    if (!lit) continue;
    for (let at = text.indexOf(lit); at !== -1; at = text.indexOf(lit, at + lit.length)) {
      ranges.push([at, at + lit.length]);
    }
  }
  return ranges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
}

// flagged(i): token i is not special and covers part of one of `ranges` (offsets: UTF-16,
// in text order, as the views use them).
export function flaggedTokens(offsets, ranges, special) {
  const flags = new Uint8Array(offsets.length);
  let r = 0;
  offsets.forEach(([s, e], i) => {
    while (r < ranges.length && ranges[r][1] <= s) r++;
    for (let k = r; k < ranges.length && ranges[k][0] < e; k++) {
      if (s < ranges[k][1] && s < e && special(i) === null) { flags[i] = 1; break; }
    }
  });
  return (i) => flags[i] === 1;
}

// The notice of a view shown as text after `refusal` (an ApiError; null hides the box).
// `literals`: the literal strings found; `how`: the request field and value used instead.
export function showLiteralNotice(box, refusal, literals, how) {
  box.replaceChildren();
  if (!refusal) { box.hidden = true; delete box.dataset.code; return; }
  const shown = literals.map((l) => JSON.stringify(l)).join(", ");
  const head = document.createElement("b");
  head.textContent = `Special-token literal ${shown}`;
  const chat = how.field === "reserved_literals";
  box.append(head,
    `: under "reject" the API refuses this ${chat ? "chat" : "text"} (${refusal.status} ${refusal.error.code}). `
    + `Shown as plain text (${how.field} "${how.value}"), the literal marked; `
    + `choose "allow" to ${chat ? "send it as its special id (trusted input only)" : "see it as its special id"}.`);
  box.dataset.code = refusal.error.code;
  box.hidden = false;
}

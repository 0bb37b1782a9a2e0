// Compare mode: the same text encoded with two tokenizers side by side (panes A and B),
// and a one-line summary of how their token counts differ.

import { channel } from "./api.js";
import { setMeta } from "./catalog.js";
import { $ } from "./dom.js";
import { syncLink } from "./share-link.js";
import { views } from "./state.js";
import { encodeInto } from "./text-mode.js";
import { codePoints } from "./unicode.js";

const cmpChans = { a: channel(), b: channel() };
export async function runCompare() {
  const text = $("#input").value;
  const results = await Promise.all(["a", "b"].map(async (side) => {
    const pane = $(`#pane-${side}`);
    const d = await encodeInto(cmpChans[side], views[side], $(".error", pane), $(".notice", pane),
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

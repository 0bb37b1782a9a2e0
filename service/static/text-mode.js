// Text mode: the text box encoded with one tokenizer (/encode with UTF-16 offsets and the
// token strings) into the main viewer and ids view, with the counts beside it. encodeInto is
// also compare mode's, once per pane.

import { api, channel } from "./api.js";
import { setMeta, specialsOf } from "./catalog.js";
import { $ } from "./dom.js";
import { showError } from "./errors.js";
import { flaggedTokens, literalRanges, refusesLiteral, showLiteralNotice } from "./literals.js";
import { syncLink } from "./share-link.js";
import { views } from "./state.js";
import { codePoints, utf8 } from "./unicode.js";

function encodeBody(tokenizer, text, policy) {
  return {
    tokenizer, text,
    special_tokens: policy,
    add_special_tokens: $("#add-special").checked,
    return_offsets: true, offset_units: "utf16", return_tokens: true,
  };
}

// /encode of `text`; a literal refused under "reject" is asked again as text (literals.js):
// {d, refusal} (refusal: the ApiError, or null).
async function encodeShowing(tokenizer, text, signal) {
  const policy = $("#special-policy").value;
  try {
    return { d: await api("POST", "/encode", encodeBody(tokenizer, text, policy), signal), refusal: null };
  } catch (e) {
    if (policy !== "reject" || !refusesLiteral(e)) throw e;
    return { d: await api("POST", "/encode", encodeBody(tokenizer, text, "text"), signal), refusal: e };
  }
}

// Encodes `text` with `tokenizer` into `view` (errors in `errorBox`, the literal notice in
// `noticeBox`); returns the response, null on an error, undefined when superseded by a newer
// request.
export async function encodeInto(chan, view, errorBox, noticeBox, tokenizer, text) {
  const viewer = view.viewer;
  viewer.dataset.status = "loading";
  const r = await chan((signal) => encodeShowing(tokenizer, text, signal));
  if (r === null) return undefined; // superseded
  if (!r.ok) {
    showError(errorBox, r.error);
    showLiteralNotice(noticeBox, null);
    view.clear();
    viewer.dataset.status = "error";
    return null;
  }
  showError(errorBox, null);
  const { d, refusal } = r.value;
  const literals = refusal ? refusal.error.literals || [] : [];
  showLiteralNotice(noticeBox, refusal, literals, { field: "special_tokens", value: "text" });
  const specials = specialsOf(d.tokenizer);
  const special = (i) => {
    const lit = specials.get(d.ids[i]);
    return lit !== undefined && d.tokens[i] === lit ? lit : null;
  };
  view.show(text, {
    ids: d.ids, offsets: d.offsets, strings: d.tokens, special,
    assistant: () => false,
    flagged: refusal ? flaggedTokens(d.offsets, literalRanges(text, literals), special) : () => false,
  });
  viewer.dataset.status = "ready";
  viewer.dataset.count = String(d.count);
  return d;
}

const textChan = channel();
export async function runText() {
  const text = $("#input").value;
  const d = await encodeInto(textChan, views.text, $("#text-error"), $("#text-notice"),
    $("#tokenizer").value, text);
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

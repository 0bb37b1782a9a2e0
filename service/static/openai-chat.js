// Chat mode for tokenizers with no chat template whose chat /count is OpenAI's documented
// accounting (o200k_base for GPT-4o, cl100k_base for GPT-4: OpenAI publishes no template,
// so there is no prompt text to render). The counts are the service's (/count with the
// messages: method "openai-chat-format"); the view draws what that rule counts, each
// message's role and content tokenized on their own (one /encode of them all), one message
// per paragraph. The blank lines between them are not tokens (drawn as gaps), and the few
// tokens each message and the reply's priming cost are in the counts, not in the text.

import { api } from "./api.js";

// The chat `messages` on `tokenizer`, as chat-mode.js shows it: {d: the /count answer,
// text, ids, offsets (UTF-16), strings, assistant(i), labels: null}. `literals` is the
// request's reserved_literals (a literal in a value is read as its special id only with
// "allow", as the service counts it).
export async function askOpenAI(tokenizer, messages, literals, signal) {
  const d = await api("POST", "/count", {
    tokenizer, messages, reserved_literals: literals, return_message_counts: true,
  }, signal);
  const values = messages.flatMap((m) => [m.role, m.content]);
  const encoded = values.length ? await api("POST", "/encode", {
    tokenizer, texts: values, special_tokens: literals === "allow" ? "allow" : "text",
    return_offsets: true, offset_units: "utf16", return_tokens: true,
  }, signal) : { results: [] };
  let text = "";
  const ids = [], offsets = [], strings = [];
  values.forEach((value, k) => {
    if (k) text += k % 2 ? "\n" : "\n\n"; // role, newline, content; a blank line, the next
    const base = text.length;
    const res = encoded.results[k];
    res.ids.forEach((id, n) => {
      ids.push(id);
      offsets.push([base + res.offsets[n][0], base + res.offsets[n][1]]);
      strings.push(res.tokens[n]);
    });
    text += value;
  });
  return { d, text, ids, offsets, strings, assistant: () => false, labels: null };
}

// The line under the counts that says how they were made.
export function describeMethod(d) {
  const exact = d.exact ? "exact" : "an estimate (tools, images or tool calls)";
  return `Counted by OpenAI's documented chat format (method ${d.method}, ${exact}): `
    + "OpenAI publishes no chat template, so there is no prompt to render. Drawn: each "
    + "message's role and content, tokenized as counted (the line breaks between them are "
    + "the page's, not tokens); each message's few extra tokens are in its count, and the "
    + `reply's priming (${d.template_tokens}) in the template tokens.`;
}

// The page's shared state: its modes, the one shown now, and the token views by name.
// (The rest of the state lives in the form controls themselves; share-link.js reads it
// from there into the URL fragment and back.)

export const MODES = ["text", "compare", "chat"];

// `mode` is set by playground.js (setMode) only.
export const page = { mode: "text" };

// name ("text", "a", "b", "chat") -> TokenView, made when the page is wired.
export const views = {};

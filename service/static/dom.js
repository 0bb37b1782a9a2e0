// Small DOM behaviours every part of the page shares: the `$` lookup, copying to the
// clipboard, and text boxes in which Tab types a tab.
// All DOM in this page is built with textContent (never innerHTML), so text from the user
// or the server cannot inject markup.

export const $ = (sel, root = document) => root.querySelector(sel);

// Copies `text` to the clipboard (a hidden text box and execCommand where the clipboard
// API is not available, e.g. outside a secure context).
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
  } catch (_) {
    const area = document.createElement("textarea");
    area.value = text;
    area.style.cssText = "position:fixed;opacity:0";
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
}

// Tab in a text box types a tab (tokenizers care about tabs); Escape, then Tab, leaves it.
export function tabInserts(area) {
  let leaving = false;
  area.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") { leaving = true; return; }
    if (ev.key !== "Tab" || ev.shiftKey || ev.ctrlKey || ev.altKey || ev.metaKey || leaving) {
      leaving = false;
      return;
    }
    ev.preventDefault();
    if (!document.execCommand("insertText", false, "\t")) { // keeps undo; fires "input"
      area.setRangeText("\t", area.selectionStart, area.selectionEnd, "end");
      area.dispatchEvent(new Event("input", { bubbles: true }));
    }
  });
}

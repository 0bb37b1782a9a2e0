// The page's "settled" signal: body[data-busy] counts pending debounces, requests and link
// writes; "0" means nothing is pending (what the browser tests wait for). Also the debounce
// that counts itself in it while it waits.

const DEBOUNCE_MS = 150;

let busy = 0;

export function setBusy(delta) {
  busy += delta;
  document.body.dataset.busy = String(busy);
}

// `fn` run once, DEBOUNCE_MS after the last call; the page is busy in between.
export function debounced(fn, ms = DEBOUNCE_MS) {
  let timer = null;
  return () => {
    if (timer === null) setBusy(1); else clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      try { fn(); } finally { setBusy(-1); }
    }, ms);
  };
}

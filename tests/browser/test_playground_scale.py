"""The playground keeps up with a large text: 300k characters are shown in at most 2 s in
headless Chromium, and the page keeps painting frames while it works (before the chunked
viewer, the same text took 49-64 s in one layout task, with no frame at all).

Measured in the page itself: t0 is the "input" event the text box fires when the text is
pasted (the paste itself, the text box laying out 300k characters, is done and painted
before t0: that is the browser's work, not the page's). "Shown" is the first frame in which
the token count is on the page and every chunk of the viewer and of the ids view that is in
sight is drawn with its token spans. Responsiveness: a requestAnimationFrame probe records
the gap between consecutive frames, and a long-task observer the tasks over 50 ms, from t0
to a second after "shown" (chunks drawn as they come into view, the share link written).
The figures are printed and written to build/playground-300k.json.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

from test_playground import (  # tests/browser is on sys.path (rootdir conftest, no __init__)
    encode_request,
    expected_groups,
    utf16_len,
)

if TYPE_CHECKING:
    from tests.browser.conftest import Playground

CHARS = 300_000
SHOWN_WITHIN_MS = 2_000           # the bound
FRAME_GAP_UNDER_MS = 500          # "not frozen", generous for a loaded 2-core machine
REPORT = Path(__file__).resolve().parents[2] / "build" / "playground-300k.json"

_PROSE = [
    ("Tokenizers split text into pieces, and the playground shows every piece over the "
     "characters it covers."),
    ("A gateway counts tokens before it forwards a request, so the count must match the "
     "model's own tokenizer exactly."),
    ("Offsets are UTF-16 code units here, as the browser counts them; the service can also "
     "answer in code points or bytes."),
    "Numbers like 3.14159, 2024-06-01 and 1,234,567 are split differently by each vocabulary.",
    ("See https://example.org/docs/tokenize?lang=en&v=2 for the reference, or mail "
     "ops@example.org."),
]
_WORLD = [
    "日本語のテキストは文字ごとに分かれることが多い。東京都は晴れ、気温は二十三度です。",
    "한국어 문장도 잘 나뉩니다. 오늘 날씨가 좋네요!",
    "Русский текст: съешь же ещё этих мягких французских булок, да выпей чаю.",
    "العربية: النص يُكتب من اليمين إلى اليسار.",
    "Ελληνικά: η γρήγορη καφέ αλεπού. Español: ¿qué tal, señor Muñoz?",
    "café vs cafe\u0301, naïve coöperation, n\u0303, a\u0308\u0301 (combining marks)",
    "emoji 👩🏽\u200d💻 👨\u200d👩\u200d👧\u200d👦 👍🏿 🏳️\u200d🌈 🇯🇵 and ✨ in between",
]
_CODE = [
    ("def encode(self, text: str) -> list[int]:\n    ids = self._engine.encode(text)\n"
     "    return [i for i in ids if i >= 0]\n"),
    "for (let i = 0; i < n; i++) {\n\tsum += values[i] * 2;  // tab-indented\n}\n",
    '{"tokenizer": "o200k_base", "text": "hello", "return_offsets": true}\n',
]


def large_text(chars: int = CHARS, seed: int = 16) -> str:
    """Mixed prose, scripts, emoji and code in paragraphs: `chars` code points."""
    rng = random.Random(seed)
    out: list[str] = []
    total = 0
    n = 0
    while total < chars:
        n += 1
        kind = rng.random()
        if kind < 0.55:
            para = " ".join(rng.choice(_PROSE) for _ in range(rng.randint(2, 6)))
        elif kind < 0.85:
            para = " ".join(rng.choice(_WORLD) for _ in range(rng.randint(1, 4)))
        else:
            para = rng.choice(_CODE)
        para = f"{n}. {para}\n\n" if not para.endswith("\n") else para + "\n"
        out.append(para)
        total += len(para)
    return "".join(out)[:chars]


PROBE = """() => {
  const p = window.__probe = { gaps: [], long: [], last: performance.now(), on: true, shown: null };
  const tick = () => {
    const now = performance.now();
    p.gaps.push([now, now - p.last]);
    p.last = now;
    if (p.on) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) p.long.push([e.startTime, e.duration]);
  }).observe({ type: 'longtask' });
}"""

# True (and the time noted) once the count is shown and what is in sight is drawn.
SHOWN = """([text, count]) => {
  const v = document.querySelector('#viewer');
  if (v.dataset.status !== 'ready' || v.textSource !== text) return false;
  if (document.querySelector('#token-count').textContent !== String(count)) return false;
  for (const box of [v, document.querySelector('#ids')]) {
    const b = box.getBoundingClientRect();
    for (const c of box.children) {
      const r = c.getBoundingClientRect();
      if (r.bottom > b.top && r.top < b.bottom && !('drawn' in c.dataset)) return false;
    }
  }
  window.__probe.shown = window.__probe.shown || performance.now();
  return true;
}"""

# Does the element `sel` lie within the visible area of its scroll box `box`?
IN_SIGHT_FN = """(box, sel) => {
  const b = document.querySelector(box).getBoundingClientRect();
  const r = document.querySelector(sel).getBoundingClientRect();
  return r.height > 0 && r.top >= b.top - 1 && r.bottom <= b.bottom + 1;
}"""
IN_SIGHT = f"([box, sel]) => ({IN_SIGHT_FN})(box, sel)"


def test_300k_characters_shown_within_2s_without_freezing(playground: Playground) -> None:
    pg = playground
    page = pg.page
    text = large_text()
    assert len(text) == CHARS
    enc = pg.api("/encode", encode_request("o200k_base@1", text))
    count = len(enc["ids"])
    groups = expected_groups(enc["ids"], enc["offsets"])

    pg.open("text")
    # The paste: the text box holds and paints the text before the page is told (t0).
    page.evaluate("""t => new Promise(done => { document.querySelector('#input').value = t;
                       requestAnimationFrame(() => requestAnimationFrame(done)); })""", text)
    page.evaluate(PROBE)
    t0 = page.evaluate("""() => { const t0 = performance.now();
        document.querySelector('#input').dispatchEvent(new Event('input', { bubbles: true }));
        return t0; }""")
    page.wait_for_function(SHOWN, arg=[text, count], polling="raf", timeout=60_000)
    page.wait_for_timeout(1_000)
    page.wait_for_function("document.body.dataset.busy === '0'")
    probe: dict[str, Any] = page.evaluate("() => { window.__probe.on = false; return window.__probe; }")
    shown_ms = probe["shown"] - t0
    gaps = [gap for at, gap in probe["gaps"] if at > t0]
    long_tasks = [dur for start, dur in probe["long"] if start + dur > t0]
    figures = {
        "text": f"{CHARS} code points ({utf16_len(text)} UTF-16 units, {len(text.encode())} "
                "UTF-8 bytes) of mixed prose, CJK/Hangul/Cyrillic/Arabic/Greek, emoji and code",
        "tokenizer": "o200k_base@1", "tokens": count,
        "shown_ms": round(shown_ms),
        "longest_frame_gap_ms": round(max(gaps)),
        "frames": len(gaps),
        "longest_task_ms": round(max(long_tasks, default=0)),
        "tasks_over_50ms": len(long_tasks),
        "window_ms": round(probe["gaps"][-1][0] - t0),
    }
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"\nplayground, 300k characters: {json.dumps(figures)}")
    assert shown_ms <= SHOWN_WITHIN_MS, figures
    assert max(gaps) < FRAME_GAP_UNDER_MS, figures
    assert len(gaps) >= shown_ms / FRAME_GAP_UNDER_MS, figures

    # What is shown is the text, exactly, with the API's numbers...
    assert page.evaluate("document.querySelector('#viewer').textContent") == text
    assert int(pg.text_of("#token-count")) == count
    assert int(pg.text_of("#char-count")) == CHARS
    assert pg.ids_shown() == enc["ids"]
    drawn = pg.spans("#viewer")
    assert [(s["start"], s["end"], s["ids"]) for s in drawn] == groups[:len(drawn)]
    # ...drawn as far as one looks (not 100k spans at once).
    assert 0 < len(drawn) < len(groups) // 10

    # Scrolling to the end draws the end.
    page.eval_on_selector("#viewer", "v => { v.scrollTop = v.scrollHeight; }")
    page.wait_for_function(f"""() => {{ const v = document.querySelector('#viewer');
        v.scrollTop = v.scrollHeight;  // again, as chunks drawn on the way settle their heights
        return v.lastElementChild.dataset.drawn !== undefined
          && ({IN_SIGHT_FN})('#viewer', '#viewer .chunk:last-child .tok:last-child'); }}""")
    drawn = [(s["start"], s["end"], s["ids"]) for s in pg.spans("#viewer")]
    assert drawn[-1] == groups[-1]  # the spans are lists, the groups' members too
    every = {(s, e, tuple(m)) for s, e, m in groups}
    assert all((s, e, tuple(ids)) in every for s, e, ids in drawn)

    # Hover, both ways, across the whole text: the last id lights up the last token, which
    # the viewer (scrolled back to the top first) brings into sight...
    page.eval_on_selector("#viewer", "v => { v.scrollTop = 0; }")
    page.eval_on_selector("#ids", "b => { b.scrollTop = b.scrollHeight; }")
    page.wait_for_function("document.querySelector('#ids').lastElementChild.dataset.drawn !== undefined")
    last = count - 1
    page.locator(f'#ids .id[data-i="{last}"]').hover()
    page.wait_for_function(IN_SIGHT, arg=["#viewer", "#viewer .tok.hover"])
    lit = page.eval_on_selector("#viewer .tok.hover", "el => [Number(el.dataset.start), Number(el.dataset.end), el.dataset.ids]")
    assert (lit[0], lit[1], [int(x) for x in lit[2].split(",")]) == groups[-1]
    assert f"token #{last}   id {enc['ids'][last]}" in page.inner_text("#tip")

    # ...and a token in the middle lights up its ids, which the ids view brings into sight.
    page.eval_on_selector("#viewer", "v => { v.scrollTop = v.scrollHeight / 2; }")
    page.wait_for_timeout(100)
    target = page.evaluate("""() => {
        const v = document.querySelector('#viewer'), b = v.getBoundingClientRect();
        const el = document.elementFromPoint(b.left + b.width / 3, b.top + b.height / 2);
        const tok = el && el.closest('.tok');
        return tok ? Number(tok.dataset.g) : null; }""")
    assert target is not None and target > len(groups) // 4
    page.locator(f'#viewer .tok[data-g="{target}"]').hover()
    page.wait_for_function(IN_SIGHT, arg=["#ids", "#ids .id.hover"])
    lit_ids = page.eval_on_selector_all("#ids .id.hover", "els => els.map(el => Number(el.textContent))")
    assert lit_ids == groups[target][2]

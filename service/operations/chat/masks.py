"""Assistant spans and training labels for a rendered chat.

Two rules, and the result says which one was used:
``generation``  the template has ``{% generation %}`` blocks: the spans are exactly what
                those blocks rendered, as transformers' ``return_assistant_tokens_mask``
                computes them.
``content``     otherwise: the characters that came from an assistant message's content,
                reasoning (``reasoning_content``/``thinking``/``reasoning``) or
                ``tool_calls`` fields, as tracked by provenance. Template-made text
                around them (role headers, end-of-turn tokens) is not included.

``labels[i]`` is ``ids[i]`` when token i's character offsets overlap a span, else -100.
"""

from __future__ import annotations

from collections.abc import Sequence

from .provenance import Origin, Run

ASSISTANT_FIELDS = frozenset({"content", "reasoning_content", "thinking", "reasoning",
                              "tool_calls"})
IGNORE = -100


def content_spans(runs: Sequence[Run], origins: Sequence[Origin]) -> list[list[int]]:
    """Merged ``[start, end)`` spans of the runs that came from assistant fields."""
    spans: list[list[int]] = []
    for s, e, oid in sorted(runs):
        o = origins[oid]
        if o.role != "assistant" or o.field not in ASSISTANT_FIELDS:
            continue
        if spans and s <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], e)
        else:
            spans.append([s, e])
    return spans


def generation_spans(indices: Sequence[tuple[int, int]], text_len: int) -> list[list[int]]:
    """The generation blocks' spans, clipped to the (possibly cut) text, empty ones dropped."""
    out = []
    for s, e in indices:
        s, e = min(s, text_len), min(e, text_len)
        if s < e:
            out.append([s, e])
    return out


def labels_for(ids: Sequence[int], offsets: Sequence[Sequence[int]],
               spans: Sequence[Sequence[int]]) -> list[int]:
    """``ids[i]`` where token i overlaps a span, else -100 (spans need not be sorted)."""
    ordered: list[tuple[int, int]] = []
    for s, e in sorted((s, e) for s, e in spans if s < e):
        if ordered and s <= ordered[-1][1]:
            ordered[-1] = (ordered[-1][0], max(ordered[-1][1], e))
        else:
            ordered.append((s, e))
    labels = []
    k = 0
    for tid, (a, b) in zip(ids, offsets):
        while k < len(ordered) and ordered[k][1] <= a:
            k += 1
        hit = False
        j = k
        while j < len(ordered) and ordered[j][0] < max(b, a + 1):
            if ordered[j][1] > a:
                hit = True
                break
            j += 1
        labels.append(tid if hit else IGNORE)
    return labels

"""Which message each token of a rendered chat belongs to (``return_message_counts``).

The rule, documented in docs/API.md: a token belongs to the message whose caller strings
(content, name, tool calls, reasoning: every string of that message the template printed)
it overlaps, by character offsets into the rendered text; when it overlaps strings of two
messages, to the earlier one. A token that overlaps only strings of ``tools`` counts as
``tools_tokens``; everything else (what the template writes around the caller's strings:
role headers, separators, special tokens, generation prompt, ``template_kwargs``) is
``template_tokens``. So the three always sum to the number of ids.

Provenance comes from the renderer (``provenance.py``): ``runs`` are ``[start, end)``
character ranges of caller strings in the text, each with the id of its ``Origin``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .provenance import Origin, Run


def attribute(offsets: Sequence[Sequence[int]], runs: Sequence[Run],
              origins: Sequence[Origin], n_messages: int) -> tuple[list[int], int, int]:
    """``(tokens per message, tools tokens, template tokens)`` for tokens with character
    ``offsets`` (half-open, non-decreasing starts, as the encoder returns them)."""
    per_message = [0] * n_messages
    tools = template = 0
    ordered = sorted(runs)  # caller strings never overlap: sorted by start = by end
    j = 0
    for start, end in offsets:
        while j < len(ordered) and ordered[j][1] <= start:
            j += 1
        owner: int | None = None
        in_tools = False
        k = j
        while k < len(ordered) and ordered[k][0] < end:
            if ordered[k][1] > start and end > start:
                origin = origins[ordered[k][2]]
                if origin.message_index is not None:
                    if owner is None or origin.message_index < owner:
                        owner = origin.message_index
                elif origin.field == "tools":
                    in_tools = True
            k += 1
        if owner is not None and owner < n_messages:
            per_message[owner] += 1
        elif in_tools:
            tools += 1
        else:
            template += 1
    return per_message, tools, template

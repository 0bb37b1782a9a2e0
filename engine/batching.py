"""How many threads a batch gets: one home for the rule both tokenizer classes follow."""

from __future__ import annotations

import os

_CPUS = os.cpu_count() or 1  # read once: the call is not free on every batch

# Total characters below which a batch stays on one thread: handing work to another
# thread costs more than it saves (benchmarks/README.md, "batches").
_BATCH_SERIAL_BELOW = 16384


def threads_for(texts: list[str], num_threads: int | None) -> int:
    """Threads for encoding ``texts`` (``num_threads``: the caller's cap, None = cores)."""
    if len(texts) < 2:
        return 1
    workers = num_threads or _CPUS
    if workers <= 1 or sum(map(len, texts)) < _BATCH_SERIAL_BELOW:
        return 1
    return min(workers, len(texts))

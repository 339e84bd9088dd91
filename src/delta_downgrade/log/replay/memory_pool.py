"""The Arrow memory pool for the large buffers of the log: commit buffers of the Arrow replay,
what ``pyarrow.json`` reads, the checkpoint parquet files being written."""

from __future__ import annotations

import pyarrow as pa


def _memory_pool() -> pa.MemoryPool:
    """jemalloc when pyarrow has it, else pyarrow's default pool. The default, mimalloc, backs
    large allocations with transparent huge pages; in a fresh process on a busy machine their
    first touch can stall in the kernel (compaction) for a tenth of a second or more (measured
    on the checkpoint of a 46 MB log). jemalloc's small pages cost a steady few tens of ms."""
    try:
        return pa.jemalloc_memory_pool()
    except (NotImplementedError, pa.ArrowException, AttributeError):
        return pa.default_memory_pool()


#: The pool for the large buffers of checkpoint writing and of the Arrow replay
#: (``arrow_replay``): commit buffers, what ``pyarrow.json`` reads, the parquet file.
MEMORY_POOL = _memory_pool()

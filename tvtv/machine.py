"""What this machine has: its physical memory (shared out by tvtv's workers and Z3's bound)."""
from __future__ import annotations

import os

FALLBACK_MEMORY = 16 << 30   # when the system does not say


def memory_bytes() -> int:
    """The machine's physical memory in bytes (16 GiB when it cannot be read)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return FALLBACK_MEMORY

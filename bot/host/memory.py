"""Handing freed memory back to the system after work that briefly needed a lot of it.

glibc keeps the memory a process freed for its next allocations, so a service that read a few
large files holds their peak for good: reading ten hostile files left `maka serve` about 25 MB
above where it started (benchmarks/hostile_messages.py), of which `malloc_trim` returns about
half. Elsewhere than glibc (musl, macOS) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def give_back_memory() -> None:
    trim = _malloc_trim()
    if trim is not None:
        trim(0)

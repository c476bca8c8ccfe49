"""`maka serve` keeps what start-up made out of the garbage collector's full collections, and
collects the young generation less often than CPython's default."""

from __future__ import annotations

import gc

from bot.cli.serve import YOUNG_COLLECTION_EVERY, freeze_start_up_heap
from storage.search import tokenizer


async def test_the_start_up_heap_is_frozen_with_the_tokenizer_loaded() -> None:
    thresholds = gc.get_threshold()
    gc.unfreeze()
    try:
        await freeze_start_up_heap()
        assert tokenizer._jieba is not None  # frozen after the dictionary, not before it
        assert gc.get_freeze_count() > 10_000
        assert gc.get_threshold() == (YOUNG_COLLECTION_EVERY, *thresholds[1:])
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)

"""Opening the embedded index's directory, with our settings.

A search reads each hit's stored payload by decompressing the whole document-store block
that holds it, and tantivy's default block is 16 KB: a top-10 search decompressed 160 KB,
the largest part of a scoped search after tantivy's own (measured 2026-12-06, 100k chat
messages: 152 µs a search with 16 KB blocks, 134 µs with 4 KB, 121 µs with 1 KB; the store
1.6x and 2.3x the size). tantivy reads its settings from the index's `meta.json` on every
open and writes new segments with them, but tantivy-py creates an index with the defaults
and has no parameter for them. So the block size is set in `meta.json` when the index is
opened: at once for a new one, and for one created before, whose segments written from then
on have small blocks (its existing ones may keep theirs until `maka search rebuild` writes
every document again). One whose `meta.json` does not look as expected is left as it is.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import tantivy

from storage.search.errors import SearchError, SearchSchemaError

log = logging.getLogger(__name__)

DOCSTORE_BLOCK_BYTES = 4096
# tantivy's least heap for a writer; this one writes nothing, it only holds the lock.
MIN_WRITER_HEAP_BYTES = 15_000_000
META = "meta.json"


def open_index(path: Path, schema: tantivy.Schema) -> tantivy.Index:
    path.mkdir(parents=True, exist_ok=True)
    new = not (path / META).exists()
    index = _open(path, schema)
    if docstore_block_bytes(path) not in (None, DOCSTORE_BLOCK_BYTES) and _set_docstore_blocks(
        index, path, DOCSTORE_BLOCK_BYTES
    ):
        index = _open(path, schema)  # tantivy reads the settings when it opens
        if not new:
            log.info(
                "search index at %s: new documents now go in %d-byte blocks; the ones already "
                "there keep larger blocks until `maka search rebuild` (faster hits after it)",
                path,
                DOCSTORE_BLOCK_BYTES,
            )
    return index


def docstore_block_bytes(path: Path) -> int | None:
    """The block size the index at `path` writes its document store with (None: unknown)."""
    try:
        settings = json.loads((path / META).read_text("utf-8"))["index_settings"]
        return int(settings["docstore_blocksize"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _open(path: Path, schema: tantivy.Schema) -> tantivy.Index:
    try:
        return tantivy.Index(schema, path=str(path), reuse=True)
    except ValueError as exc:
        if "schema does not match" in str(exc):
            raise SearchSchemaError(
                f"the search index at {path} was built with another layout; "
                "delete that directory and reindex"
            ) from exc
        raise SearchError(f"cannot open search index at {path}: {exc}") from exc


def _set_docstore_blocks(index: tantivy.Index, path: Path, block_bytes: int) -> bool:
    """Rewrite the index's `meta.json` with this block size, all else as it is; False (the
    index left as it is) when another process writes to it or the file is not as expected.
    Done holding the directory's writer lock, so no commit lands between the read and the
    write (a writer that opened the index before may write its own settings back with its
    next commit: the blocks stay larger, nothing is lost)."""
    try:
        writer = index.writer(heap_size=MIN_WRITER_HEAP_BYTES, num_threads=1)
    except ValueError:
        return False  # another process writes to it: not ours to set up
    meta_path = path / META
    try:
        meta = json.loads(meta_path.read_text("utf-8"))
        settings = meta["index_settings"]
        if "docstore_blocksize" not in settings:
            return False
        settings["docstore_blocksize"] = block_bytes
        # Atomic and durable, as tantivy writes it: a reader opening the directory meanwhile
        # sees the old file or the new one, and a crash cannot leave it empty.
        scratch = meta_path.with_name(f"{META}.{os.getpid()}.tmp")
        with scratch.open("w", encoding="utf-8") as out:
            out.write(json.dumps(meta))
            out.flush()
            os.fsync(out.fileno())
        os.replace(scratch, meta_path)
        return True
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("search index at %s keeps tantivy's default settings: %s", path, exc)
        return False
    finally:
        writer.wait_merging_threads()  # drops the writer, releasing the lock

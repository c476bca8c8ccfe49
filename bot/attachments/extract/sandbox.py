"""The parent side of the sandbox: one child process per extraction (child.py), started with
asyncio so the event loop never waits on it, killed with its whole process group (tesseract
too) when the wall clock runs out. At most `limits.concurrency` children at once per event
loop, so ten hostile files cannot take all the memory between them.

Every outcome is an Extraction: a crash, a kill, a spawn failure or a garbled answer is one
"could not read: …" line, never an exception (cancellation aside, which kills the child)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import weakref
from pathlib import Path

from bot.attachments.extract.ocr import ocr_languages
from bot.attachments.extract.result import (
    Extraction,
    ExtractLimits,
    could_not_read,
    seconds_text,
)
from bot.attachments.extract.sniff import HEAD_BYTES, sniff
from bot.host.children import end_child
from storage.types import UNSTORABLE

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[3]  # the directory that holds the `bot` package
STDERR_KEPT = 4096  # the tail of the child's stderr, for the log
# The child caps its text at max_chars; JSON escapes make a character at most 6 bytes.
OUTPUT_SLACK = 64 * 1024

_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


def _gate(concurrency: int) -> asyncio.Semaphore:
    """The semaphore of this event loop (tests run many loops; a semaphore belongs to one)."""
    by_size = _gates.setdefault(asyncio.get_running_loop(), {})
    size = max(1, concurrency)
    if size not in by_size:
        by_size[size] = asyncio.Semaphore(size)
    return by_size[size]


async def extract(data: bytes, *, name: str, limits: ExtractLimits) -> Extraction:
    """The text of a file (see the package docstring). Never raises for a bad file."""
    if not data:
        return could_not_read("unknown", "the file is empty")
    # What the bytes look like, so that even a kill or a crash says what the file was.
    kind = sniff(data[:HEAD_BYTES], name).kind
    known = "unknown" if kind == "zip" else kind
    async with _gate(limits.concurrency):
        scratch = await asyncio.to_thread(tempfile.mkdtemp, prefix="maka-extract-")
        try:
            path = Path(scratch) / "input"
            await asyncio.to_thread(path.write_bytes, data)
            return finish(await _run_child(path, name, limits, known), limits.max_chars)
        finally:
            await asyncio.to_thread(shutil.rmtree, scratch, True)


def finish(extraction: Extraction, max_chars: int) -> Extraction:
    """The Extraction as the caller gets it, whatever the child sent: bounded, storable."""
    detail = " ".join(extraction.detail.split())[:200]
    if extraction.error is not None:
        return could_not_read(extraction.kind, extraction.error, detail)
    text = UNSTORABLE.sub("", extraction.text)[:max_chars]
    return Extraction(kind=extraction.kind, text=text, detail=detail, error=None)


async def _run_child(path: Path, name: str, limits: ExtractLimits, kind: str) -> Extraction:
    # The first call asks tesseract (a blocking subprocess), later ones read the cache.
    languages = list(await asyncio.to_thread(ocr_languages)) if limits.ocr else []
    options = {
        "path": str(path),
        "name": name,
        "seconds": limits.seconds,
        "memory_mb": limits.memory_mb,
        "max_chars": limits.max_chars,
        "ocr": limits.ocr,
        "languages": languages,
    }
    # The service's own settings (keys, database URLs) are none of a file reader's business.
    environment = {
        variable: value
        for variable, value in os.environ.items()
        if not variable.startswith("MAKA_") or variable == "MAKA_EXTRACT_DEBUG"
    }
    environment.update(OMP_THREAD_LIMIT="1", PYTHONDONTWRITEBYTECODE="1")
    environment["PYTHONPATH"] = os.pathsep.join(
        part for part in (str(ROOT), os.environ.get("PYTHONPATH", "")) if part
    )
    # In a file of the private scratch folder, not on the command line: `ps` shows that.
    options_file = path.with_name("options.json")
    try:
        await asyncio.to_thread(options_file.write_text, json.dumps(options), "utf-8")
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.attachments.extract.child",
            str(options_file),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=path.parent,
            env=environment,
            start_new_session=True,  # its own process group: one kill takes tesseract too
        )
    except OSError as error:
        log.warning("could not start the extraction child: %s", error)
        return could_not_read(kind, f"could not start the reader ({error})")
    try:
        return await _answer(child, limits, kind)
    finally:
        await end_child(child, group=True)  # one kill takes tesseract too


async def _answer(
    child: asyncio.subprocess.Process, limits: ExtractLimits, kind: str
) -> Extraction:
    """The child's answer; or, when it has none, what its end says (`kind` is the sniffed
    type, "unknown" for an Office file whose archive was not looked into here)."""
    assert child.stdout is not None and child.stderr is not None
    cap = limits.max_chars * 6 + OUTPUT_SLACK
    answering = asyncio.create_task(_bounded(child.stdout, cap))
    complaining = asyncio.create_task(_tail(child.stderr))
    try:
        async with asyncio.timeout(limits.seconds):
            stdout, overflowed = await answering
            if overflowed:  # the caller kills it; its stderr is not waited for
                return could_not_read(kind, "the reader answered too much")
            stderr = await complaining
            await child.wait()
    except TimeoutError:
        return could_not_read(kind, f"took longer than {seconds_text(limits.seconds)}")
    finally:
        answering.cancel()
        complaining.cancel()
    if child.returncode in (-signal.SIGXCPU, -signal.SIGKILL):  # its CPU limits, soft and hard
        return could_not_read(kind, f"took longer than {seconds_text(limits.seconds)}")
    try:
        answer = json.loads(stdout)
        return Extraction(
            kind=str(answer["kind"]),
            text=str(answer["text"]),
            detail=str(answer["detail"]),
            error=None if answer["error"] is None else str(answer["error"]),
        )
    except (ValueError, KeyError, TypeError):
        pass
    complaint = stderr.decode("utf-8", errors="replace")
    log.warning("extraction child ended with %s: %s", child.returncode, complaint[-500:])
    if "MemoryError" in complaint or "memory" in complaint.lower():
        return could_not_read(kind, f"needs more than {limits.memory_mb} MB")
    code = child.returncode or 0
    crashed = f"exit {code}" if code >= 0 else f"signal {_signal_name(-code)}"
    return could_not_read(kind, f"the reader crashed ({crashed})")


async def _bounded(stream: asyncio.StreamReader, cap: int) -> tuple[bytes, bool]:
    """At most `cap` bytes; (bytes, True) if there were more (the reader stops there)."""
    chunks: list[bytes] = []
    size = 0
    while chunk := await stream.read(64 * 1024):
        size += len(chunk)
        if size > cap:
            return b"", True
        chunks.append(chunk)
    return b"".join(chunks), False


async def _tail(stream: asyncio.StreamReader) -> bytes:
    kept = b""
    while chunk := await stream.read(64 * 1024):
        kept = (kept + chunk)[-STDERR_KEPT:]
    return kept


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)

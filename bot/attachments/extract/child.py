"""The sandbox child: `python -m bot.attachments.extract.child <options.json>`.

Started by sandbox.py for one file. It first limits itself (address space, CPU, file size,
open files, no core dumps; tesseract inherits all of them), then reads the file named in the
options and writes one JSON object on stdout: {"kind", "text", "detail", "error"}. A crash
or kill here costs this process only; the parent turns it into one line.

MAKA_EXTRACT_DEBUG=spin (loop forever), =eat (allocate without end) or =flood (write to stdout
without end) is for the tests of the limits: a hostile file that reliably needs time, memory
or output, without one.
"""

from __future__ import annotations

import json
import math
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

from bot.attachments.extract.result import OutOfTime, Unreadable, could_not_read, seconds_text
from bot.attachments.extract.sniff import HEAD_BYTES, sniff

MB = 1024 * 1024
LABELS = {"pdf": "PDF", "docx": "Word file", "xlsx": "Excel file", "pptx": "PowerPoint file"}
OPEN_FILES = 64


def limit_self(seconds: float, memory_mb: int) -> None:
    cpu = max(1, math.ceil(seconds))
    for which, soft, hard in (
        (resource.RLIMIT_AS, memory_mb * MB, memory_mb * MB),
        (resource.RLIMIT_CPU, cpu, cpu + 1),  # soft: SIGXCPU; hard: SIGKILL a second later
        (resource.RLIMIT_FSIZE, memory_mb * MB, memory_mb * MB),
        (resource.RLIMIT_NOFILE, OPEN_FILES, OPEN_FILES),
        (resource.RLIMIT_CORE, 0, 0),
    ):
        resource.setrlimit(which, (soft, hard))


def read(path: Path, name: str, options: dict[str, Any], found: dict[str, str]) -> tuple[str, str]:
    """(text, detail); raises Unreadable, OutOfTime, MemoryError, anything. The kind, once
    known, is put in `found` so that a refusal still says what the file was."""
    with path.open("rb") as file:
        head = file.read(HEAD_BYTES)
    sniffed = sniff(head, name)
    max_chars: int = options["max_chars"]
    kind = found["kind"] = "unknown" if sniffed.kind == "zip" else sniffed.kind
    if sniffed.kind == "zip":
        from bot.attachments.extract.zipguard import office_kind, refuse_bombs, zip_members

        members = zip_members(path)
        kind = found["kind"] = office_kind(members)
        refuse_bombs(members)  # before any library opens it
    if kind == "pdf":
        from bot.attachments.extract.pdf import read_pdf

        return read_pdf(path, max_chars)
    if kind == "docx":
        from bot.attachments.extract.office import read_docx

        return read_docx(path, max_chars)
    if kind == "pptx":
        from bot.attachments.extract.office import read_pptx

        return read_pptx(path, max_chars)
    if kind == "xlsx":
        from bot.attachments.extract.sheets import read_xlsx

        return read_xlsx(path, max_chars)
    if kind in ("text", "html"):
        from bot.attachments.extract.text import read_html, read_text

        data = path.read_bytes()
        if kind == "html":
            return read_html(data, max_chars)
        return read_text(data, name, max_chars)
    if kind == "image":
        from bot.attachments.extract.ocr import OCR_OFF, OCR_TURNED_OFF, read_image

        languages = tuple(options["languages"]) if options["ocr"] else ()
        off = OCR_OFF if options["ocr"] else OCR_TURNED_OFF
        deadline = time.monotonic() + options["seconds"]
        return read_image(path, languages, off, deadline)
    raise Unreadable(f"not a supported file type (looks like {sniffed.looks_like})")


def _debug_hook() -> None:
    what = os.environ.get("MAKA_EXTRACT_DEBUG", "")
    if what == "spin":
        while True:
            pass
    if what == "flood":
        while True:
            sys.stdout.buffer.write(b"x" * 65536)
    if what == "eat":
        hoard = []
        while True:
            hoard.append(bytearray(64 * MB))


def main() -> None:
    options = json.loads(Path(sys.argv[1]).read_text("utf-8"))
    limit_self(options["seconds"], options["memory_mb"])
    found = {"kind": "unknown"}
    try:
        _debug_hook()
        text, detail = read(Path(options["path"]), options["name"], options, found)
        answer: dict[str, Any] = {
            "kind": found["kind"],
            "text": text[: options["max_chars"]],
            "detail": detail,
            "error": None,
        }
    except MemoryError:
        answer = _refusal(found["kind"], f"needs more than {options['memory_mb']} MB")
    except OutOfTime:
        answer = _refusal(found["kind"], f"took longer than {seconds_text(options['seconds'])}")
    except Unreadable as refusal:
        answer = _refusal(found["kind"], refusal.reason)
    except RecursionError:
        endless = "it refers to itself without end"
        answer = _refusal(found["kind"], f"damaged {_label(found)} ({endless})")
    except Exception as error:  # a library's own complaint about a damaged file
        complaint = f"{type(error).__name__}: {error}"
        answer = _refusal(found["kind"], f"damaged {_label(found)} ({complaint})")
    sys.stdout.buffer.write(json.dumps(answer, ensure_ascii=False).encode("utf-8", "replace"))
    sys.stdout.buffer.flush()


def _label(found: dict[str, str]) -> str:
    return LABELS.get(found["kind"], "file")


def _refusal(kind: str, reason: str) -> dict[str, Any]:
    refused = could_not_read(kind, reason)
    return {"kind": kind, "text": "", "detail": refused.detail, "error": refused.error}


if __name__ == "__main__":
    main()

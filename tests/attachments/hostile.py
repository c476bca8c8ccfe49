"""The hostile files: each is made to hurt a reader (expand, loop, lie, exhaust), and each
must end in one "could not read: …" line (the spreadsheet that declares a million rows by
16,384 columns is the exception: its declared size is ignored and its real cells are read).
Shared by tests/attachments/test_extract_hostile.py and benchmarks/hostile_files.py."""

from __future__ import annotations

import functools
import io
import random
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from tests.attachments import files


@dataclass(frozen=True)
class Hostile:
    label: str
    name: str
    make: Callable[[], bytes]
    expect: str  # a part of the error line, or of the text for the one that is read


@functools.cache
def zip_bomb_docx() -> bytes:
    """A real .docx with one more member: 1 GB of zeros, deflated to about 1 MB."""
    out = io.BytesIO(files.docx("bombword"))
    with zipfile.ZipFile(out, "a", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("word/media/zeros.bin", "w", force_zip64=True) as member:
            chunk = bytes(1 << 20)
            for _ in range(1024):
                member.write(chunk)
    return out.getvalue()


def pixel_bomb_png(width: int = 50_000, height: int = 50_000) -> bytes:
    """A PNG whose header says width x height (greyscale), with a tiny IDAT: decoding it
    would need width*height bytes; only the header is honest about that."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(bytes(1024)))
        + chunk(b"IEND", b"")
    )


def random_bytes() -> bytes:
    return random.Random(40).randbytes(64 * 1024)


def nul_text() -> bytes:
    return bytes(100_000) + b"words after a hundred thousand NULs"


def nested_json(depth: int = 100_000) -> bytes:
    return b"[" * depth + b"]" * depth


def declared_million_cells_xlsx(rows: int = 3000) -> bytes:
    """An .xlsx whose sheet declares A1:XFD1048576 (17 billion cells) and holds `rows` short
    rows, the last with "dimensionword": openpyxl pads every row it reads to the declared
    16,384 columns unless the declaration is reset."""
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    for number in range(1, rows):
        sheet.append([f"row{number}", number])
    sheet.append(["dimensionword", 42])
    out = io.BytesIO()
    workbook.save(out)
    archive = out.getvalue()
    with zipfile.ZipFile(io.BytesIO(archive)) as source:
        xml = source.read("xl/worksheets/sheet1.xml").decode()
    start = xml.index("<dimension ")
    end = xml.index("/>", start) + 2
    xml = xml[:start] + '<dimension ref="A1:XFD1048576"/>' + xml[end:]
    return files.rezip(archive, replace={"xl/worksheets/sheet1.xml": xml.encode()})


HOSTILE: tuple[Hostile, ...] = (
    Hostile("zip bomb in a .docx", "bomb.docx", zip_bomb_docx, "expands too much (zip bomb?)"),
    Hostile("50000x50000 PNG", "huge.png", pixel_bomb_png, "image too large (50000x50000)"),
    Hostile("PDF page tree loop", "loop.pdf", files.pdf_with_page_loop, "damaged PDF"),
    Hostile("random bytes named .pdf", "report.pdf", random_bytes, "looks like binary data"),
    Hostile(
        "encrypted PDF",
        "secret.pdf",
        lambda: files.encrypted_pdf("lockedword"),
        "the PDF is encrypted",
    ),
    Hostile("truncated PDF", "cut.pdf", lambda: files.pdf("cutword")[:150], "damaged PDF"),
    Hostile("empty file", "empty.txt", lambda: b"", "the file is empty"),
    Hostile("text of NULs", "notes.txt", nul_text, "looks like binary data"),
    Hostile("deeply nested JSON", "deep.json", nested_json, "nested too deeply"),
    Hostile(
        "xlsx declaring a million rows",
        "sheet.xlsx",
        declared_million_cells_xlsx,
        "dimensionword",
    ),
)

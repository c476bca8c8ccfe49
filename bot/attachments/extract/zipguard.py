"""Office files are ZIP archives: before a library opens one, its members' declared sizes are
checked here, so a zip bomb is refused instead of expanded. Declared sizes are enough: Python's
zipfile never returns more bytes from a member than its declared size (and checks the CRC)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from bot.attachments.extract.result import Unreadable

MAX_MEMBERS = 10_000
MAX_TOTAL_BYTES = 300 * 1024 * 1024  # all members, uncompressed
# Office XML compresses 10-50x, rarely 100x; a zip bomb's deflate reaches ~1000x.
MAX_RATIO = 200
RATIO_APPLIES_OVER = 5 * 1024 * 1024  # small members may compress as they like

# The part that tells an Office Open XML file's kind.
OOXML_MAIN_PARTS = {
    "word/document.xml": "docx",
    "xl/workbook.xml": "xlsx",
    "ppt/presentation.xml": "pptx",
}


def zip_members(path: Path) -> list[zipfile.ZipInfo]:
    """The archive's table of contents (nothing is expanded); Unreadable when damaged."""
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as error:
        raise Unreadable(f"damaged archive ({error})") from None


def office_kind(members: list[zipfile.ZipInfo]) -> str:
    """ "docx", "xlsx" or "pptx"; Unreadable for a ZIP that is not an Office document."""
    names = {member.filename for member in members}
    for part, kind in OOXML_MAIN_PARTS.items():
        if part in names:
            return kind
    if "mimetype" in names and any(name.endswith(".opf") for name in names):
        raise Unreadable("not a supported file type (looks like an e-book (EPUB))")
    if "content.xml" in names and "mimetype" in names:
        raise Unreadable("not a supported file type (looks like an OpenDocument file)")
    raise Unreadable("not a supported file type (looks like a ZIP archive)")


def refuse_bombs(members: list[zipfile.ZipInfo]) -> None:
    """Unreadable when the members would expand too much to be opened."""
    if len(members) > MAX_MEMBERS:
        raise Unreadable(f"the archive has too many parts ({len(members)})")
    total = 0
    for member in members:
        total += member.file_size
        expands = member.file_size / max(member.compress_size, 1)
        if total > MAX_TOTAL_BYTES or (
            member.file_size > RATIO_APPLIES_OVER and expands > MAX_RATIO
        ):
            raise Unreadable("the archive expands too much (zip bomb?)")

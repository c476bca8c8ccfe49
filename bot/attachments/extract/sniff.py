"""The real type of a file, from its first bytes, whatever its name says: a PDF named .docx
is read as a PDF, a PNG named .docx as an image. The name only tells text from HTML."""

from __future__ import annotations

from dataclasses import dataclass

HEAD_BYTES = 64 * 1024  # what `sniff` looks at

IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"BM", "BMP"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
)

# Types we do not read, named so the user learns what the file looks like to us.
OTHER_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Office document (.doc, .xls or .ppt)"),
    (b"{\\rtf", "an RTF document"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"\x7fELF", "a Linux program"),
    (b"MZ", "a Windows program"),
    (b"ID3", "an MP3 audio file"),
    (b"OggS", "an Ogg audio file"),
    (b"fLaC", "a FLAC audio file"),
    (b"#!AMR", "an AMR voice recording"),
    (b"%!PS", "a PostScript document"),
    (b"SQLite format 3\x00", "an SQLite database"),
)

HTML_NAMES = (".html", ".htm", ".xhtml")
HTML_STARTS = (b"<!doctype html", b"<html")
# Bytes that do not occur in text (controls other than tab, newlines, form feed, escape).
BINARY_BYTES = bytes([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1B), 0x7F])
BINARY_SHARE = 0.05  # more binary bytes than this in the head: not text


@dataclass(frozen=True)
class Sniffed:
    kind: str  # "pdf" | "zip" | "image" | "text" | "html" | "unknown"
    looks_like: str  # what the file looks like, for "not a supported file type (looks like …)"


def sniff(head: bytes, name: str) -> Sniffed:
    if not head:
        return Sniffed("unknown", "an empty file")
    # A PDF may have junk before its header; readers accept it within the first KB.
    if b"%PDF-" in head[:1024]:
        return Sniffed("pdf", "a PDF")
    if head.startswith(b"PK\x03\x04"):
        return Sniffed("zip", "a ZIP archive")
    text = _is_text(head)
    for magic, what in IMAGE_MAGIC:
        if _starts(head, magic, text):
            return Sniffed("image", f"a {what} image")
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return Sniffed("image", "a WebP image")
    if head.startswith(b"RIFF"):
        return Sniffed("unknown", "a RIFF file (WAV audio or AVI video)")
    if head[4:8] == b"ftyp":
        return Sniffed("unknown", "an MP4 or MOV video, or M4A audio")
    for magic, what in OTHER_MAGIC:
        if _starts(head, magic, text):
            return Sniffed("unknown", what)
    if text:
        text_start = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
        if name.lower().endswith(HTML_NAMES) or text_start.startswith(HTML_STARTS):
            return Sniffed("html", "an HTML page")
        return Sniffed("text", "text")
    return Sniffed("unknown", "binary data")


def _starts(head: bytes, magic: bytes, text: bool) -> bool:
    """A magic of two or three bytes ("BM", "MZ", "ID3") also starts ordinary words: it
    counts only when what follows is not text."""
    return head.startswith(magic) and (len(magic) >= 4 or not text)


def _is_text(head: bytes) -> bool:
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True  # UTF-16 with a BOM: every other byte is NUL, and that is fine
    binary = len(head) - len(head.translate(None, BINARY_BYTES))  # counted in C, not a loop
    return binary <= BINARY_SHARE * len(head)

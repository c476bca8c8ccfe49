"""PDF text with pypdf, page by page until the text is long enough."""

from __future__ import annotations

import logging
from pathlib import Path

from bot.attachments.extract.result import Unreadable

Read = tuple[str, str]  # (text, detail)


def read_pdf(path: Path, max_chars: int) -> Read:
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings are about damage we report
    try:
        reader = PdfReader(path, strict=False)
        if reader.is_encrypted and not _opens_without_password(reader):
            raise Unreadable("the PDF is encrypted")
        pages = reader.pages
        count = len(pages)
        parts: list[str] = []
        length = 0
        read = 0
        for page in pages:
            if length >= max_chars:
                break
            text = page.extract_text() or ""
            parts.append(text)
            length += len(text) + 2
            read += 1
    except Unreadable:
        raise
    except (FileNotDecryptedError, DependencyError):
        raise Unreadable("the PDF is encrypted") from None
    except RecursionError:
        raise Unreadable("damaged PDF (it refers to itself without end)") from None
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError) as error:
        raise Unreadable(f"damaged PDF ({error or type(error).__name__})") from None
    if count == 0:
        raise Unreadable("damaged PDF (no pages)")
    text = "\n\n".join(part.strip() for part in parts).strip()
    if not text:
        raise Unreadable("no text in the PDF (scanned pages are not read)")
    detail = _pages(count) if read == count else f"{_pages(count)}, first {read} read"
    return text, detail


def _opens_without_password(reader: object) -> bool:
    """Many PDFs are encrypted with an empty user password only to restrict printing."""
    from pypdf import PasswordType

    try:
        return reader.decrypt("") != PasswordType.NOT_DECRYPTED  # type: ignore[attr-defined]
    except Exception:
        return False


def _pages(count: int) -> str:
    return "1 page" if count == 1 else f"{count} pages"

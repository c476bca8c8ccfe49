"""What an extraction answers (`Extraction`), what bounds it (`ExtractLimits`), and how a
refusal becomes one line. Imported by the sandbox child too, so it stays light."""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "could not read: "
ERROR_CHARS = 200  # an error is one line shown to the user, not a traceback


@dataclass(frozen=True)
class ExtractLimits:
    seconds: float = 30.0  # wall clock for the whole extraction, OCR included
    memory_mb: int = 512  # address space of the sandbox process (and of tesseract)
    max_chars: int = 200_000  # text beyond this is cut
    ocr: bool = True  # read images with tesseract (when it is installed)
    concurrency: int = 2  # extractions at once in one process; more wait their turn


@dataclass(frozen=True)
class Extraction:
    kind: str  # "pdf" | "docx" | "xlsx" | "pptx" | "text" | "html" | "image" | "unknown"
    text: str  # "" when unreadable
    detail: str  # e.g. "3 pages", "2 sheets", "OCR chi_sim+eng", "" when none
    error: str | None  # None, or "could not read: <reason>" (one line, for the user)


class Unreadable(Exception):
    """A reader's refusal: the reason becomes the Extraction's one-line error."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class OutOfTime(Exception):
    """The extraction (or the tesseract it ran) used up its time."""


def seconds_text(seconds: float) -> str:
    return f"{seconds:g} s"


def could_not_read(kind: str, reason: str, detail: str = "") -> Extraction:
    return Extraction(kind=kind, text="", detail=detail, error=one_line(reason))


def one_line(reason: str) -> str:
    reason = " ".join(reason.split())
    if reason.startswith(PREFIX):
        reason = reason[len(PREFIX) :]
    line = PREFIX + reason
    if len(line) > ERROR_CHARS:
        line = line[: ERROR_CHARS - 1] + "…"
    return line

"""Text from the files people send: PDF, Word, Excel, PowerPoint, text, HTML, and images by
OCR, each read in a sandboxed child process (sandbox.py, child.py).

    from bot.attachments.extract import extract, ExtractLimits, Extraction, ocr_available
    extraction = await extract(data, name="report.pdf", limits=ExtractLimits())

The type comes from the bytes (sniff.py), not the name. `extract` never raises for a bad
file: every failure is an Extraction whose `error` is one line, "could not read: <reason>".

The names are loaded on first use: the sandbox child (`python -m ...extract.child`) imports
this package too, and must not pay for the parent's imports (asyncio, SQLAlchemy).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.attachments.extract.ocr import STARTUP_LINE as OCR_OFF_LINE
    from bot.attachments.extract.ocr import ocr_available
    from bot.attachments.extract.result import Extraction, ExtractLimits
    from bot.attachments.extract.sandbox import extract

__all__ = ["OCR_OFF_LINE", "ExtractLimits", "Extraction", "extract", "ocr_available"]

_WHERE = {
    "OCR_OFF_LINE": ("ocr", "STARTUP_LINE"),
    "ocr_available": ("ocr", "ocr_available"),
    "ExtractLimits": ("result", "ExtractLimits"),
    "Extraction": ("result", "Extraction"),
    "extract": ("sandbox", "extract"),
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _WHERE[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)

"""OCR tests need tesseract with chi_sim and eng (scripts/ensure-tesseract installs them):
skipped with the reason where it is missing, a failure under CI."""

from __future__ import annotations

import os

import pytest

from bot.attachments.extract import ocr_available


@pytest.fixture
def ocr() -> None:
    if ocr_available():
        return
    message = "tesseract with chi_sim and eng not installed (run scripts/ensure-tesseract)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)

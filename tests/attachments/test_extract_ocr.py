"""Images are read by OCR (tesseract, Chinese and English); without it, one line says how to
turn it on."""

from __future__ import annotations

import pytest

from bot.attachments.extract import ExtractLimits, extract, ocr_available, sandbox
from bot.attachments.extract import ocr as ocr_module
from bot.attachments.extract.ocr import join_cjk
from tests.attachments import files


@pytest.mark.usefixtures("ocr")
async def test_an_image_of_printed_english_text_is_read() -> None:
    png = files.text_image([("Invoice ZEBRA 2024", None)])
    extraction = await extract(png, name="photo.png", limits=ExtractLimits())
    assert extraction.error is None
    assert extraction.kind == "image"
    assert "ZEBRA" in extraction.text
    assert extraction.detail == "OCR chi_sim+eng"


@pytest.mark.usefixtures("ocr")
async def test_an_image_of_printed_chinese_text_is_read_as_words_without_spaces() -> None:
    font = files.cjk_font()
    if font is None:
        pytest.skip("no font with Chinese glyphs (apt-get install fonts-wqy-zenhei)")
    png = files.text_image([("Meeting NOTES", None), ("报销审批流程", font)])
    extraction = await extract(png, name="scan.jpg", limits=ExtractLimits())
    assert extraction.error is None
    assert "NOTES" in extraction.text
    assert "报销审批" in extraction.text  # tesseract's spaces between the characters removed


def test_spaces_between_chinese_characters_are_removed_and_others_kept() -> None:
    assert join_cjk("报 销 审 批 for the 项 目 ，ok") == "报销审批 for the 项目，ok"


async def test_without_tesseract_an_image_says_how_to_turn_ocr_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sandbox, "ocr_languages", lambda: ())
    png = files.text_image([("HELLO", None)])
    extraction = await extract(png, name="a.png", limits=ExtractLimits())
    assert extraction.error == (
        "could not read: OCR is off (install tesseract-ocr and tesseract-ocr-chi-sim)"
    )


def test_ocr_is_unavailable_when_tesseract_is_not_on_the_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    ocr_module.ocr_languages.cache_clear()
    try:
        assert ocr_available() is False
    finally:
        monkeypatch.undo()
        ocr_module.ocr_languages.cache_clear()

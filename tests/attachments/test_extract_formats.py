"""Each supported format gives up its words; the type is taken from the bytes, not the name."""

from __future__ import annotations

from bot.attachments.extract import ExtractLimits, extract
from tests.attachments import files

LIMITS = ExtractLimits()


async def test_pdf_text_comes_out_page_by_page() -> None:
    extraction = await extract(files.pdf("zebracrossing", "okapi"), name="a.pdf", limits=LIMITS)
    assert extraction.error is None
    assert extraction.kind == "pdf"
    assert "zebracrossing" in extraction.text and "okapi" in extraction.text
    assert extraction.detail == "2 pages"


async def test_word_document_paragraphs_and_tables_are_read() -> None:
    extraction = await extract(files.docx("quokka"), name="notes.docx", limits=LIMITS)
    assert extraction.error is None
    assert extraction.kind == "docx"
    assert "The code word is quokka." in extraction.text
    assert "quokkatable" in extraction.text


async def test_spreadsheet_cell_values_are_read_sheet_by_sheet() -> None:
    extraction = await extract(files.xlsx("wombat"), name="budget.xlsx", limits=LIMITS)
    assert extraction.error is None
    assert extraction.kind == "xlsx"
    assert "## Budget" in extraction.text
    assert "wombat\t42" in extraction.text
    assert extraction.detail == "2 sheets"


async def test_slides_text_is_read() -> None:
    extraction = await extract(files.pptx("narwhal"), name="deck.pptx", limits=LIMITS)
    assert extraction.error is None
    assert extraction.kind == "pptx"
    assert "Ship narwhal next" in extraction.text
    assert "a text box" in extraction.text
    assert extraction.detail == "1 slide"


async def test_utf8_and_gb18030_text_are_both_decoded() -> None:
    words = "报销流程 reimbursement"
    utf8 = await extract(words.encode("utf-8"), name="a.md", limits=LIMITS)
    gb = await extract(words.encode("gb18030"), name="a.txt", limits=LIMITS)
    utf16 = await extract(words.encode("utf-16"), name="a.csv", limits=LIMITS)
    assert (utf8.text, utf8.detail) == (words, "UTF-8")
    assert (gb.text, gb.detail) == (words, "GB18030")
    assert (utf16.text, utf16.detail) == (words, "UTF-16")


async def test_html_gives_visible_text_without_script_or_style() -> None:
    page = (
        b"<!DOCTYPE html><html><head><title>Trip plan</title>"
        b"<style>body { color: red }</style></head><body>"
        b"<script>var hidden = 'scriptword';</script>"
        b"<h1>Day one</h1><p>Visit the <b>pangolin</b> museum</p></body></html>"
    )
    extraction = await extract(page, name="page", limits=LIMITS)
    assert extraction.error is None
    assert extraction.kind == "html"
    assert "Visit the pangolin museum" in extraction.text
    assert "Trip plan" in extraction.text
    assert "scriptword" not in extraction.text and "color" not in extraction.text


async def test_a_pdf_named_docx_is_read_as_a_pdf() -> None:
    extraction = await extract(files.pdf("misnamed"), name="report.docx", limits=LIMITS)
    assert extraction.kind == "pdf"
    assert "misnamed" in extraction.text


async def test_a_png_named_docx_is_read_as_an_image() -> None:
    png = files.text_image([("HELLO", None)])
    extraction = await extract(png, name="report.docx", limits=ExtractLimits(ocr=False))
    assert extraction.kind == "image"
    assert extraction.error == "could not read: OCR is turned off"


async def test_an_unsupported_type_says_what_it_looks_like() -> None:
    old_word = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512)
    extraction = await extract(old_word, name="old.doc", limits=LIMITS)
    assert extraction.error == (
        "could not read: not a supported file type "
        "(looks like an old Office document (.doc, .xls or .ppt))"
    )
    assert extraction.text == ""


async def test_a_zip_that_is_not_an_office_file_is_not_read() -> None:
    archive = files.rezip(files.docx("x"))  # a docx ...
    plain = files.rezip(b"PK\x05\x06" + bytes(18), extra={"readme.txt": b"hi"})  # ... and not
    assert (await extract(archive, name="a.zip", limits=LIMITS)).kind == "docx"
    extraction = await extract(plain, name="a.zip", limits=LIMITS)
    assert (
        extraction.error == "could not read: not a supported file type (looks like a ZIP archive)"
    )


async def test_text_is_cut_at_max_chars() -> None:
    extraction = await extract(
        b"abcdefghij" * 1000, name="long.txt", limits=ExtractLimits(max_chars=25)
    )
    assert extraction.text == "abcdefghijabcdefghijabcde"


async def test_a_few_nuls_in_text_are_dropped_so_the_text_can_be_stored() -> None:
    text = b"hello\x00 world\x00. " + b"the rest of a long enough note. " * 5
    extraction = await extract(text, name="a.txt", limits=LIMITS)
    assert extraction.error is None
    assert extraction.text.startswith("hello world. the rest")
    assert "\x00" not in extraction.text


async def test_text_that_starts_like_a_bitmap_or_a_program_is_still_text() -> None:
    for words in (b"BMW service plan for March", b"MZ-12 parts list", b"ID3 tags explained"):
        extraction = await extract(words * 3, name="notes.txt", limits=LIMITS)
        assert (extraction.kind, extraction.error) == ("text", None), words

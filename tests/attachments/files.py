"""Files made in the test, each carrying a word found nowhere else, so a test can tell that
the text really came out of the file (no binary fixtures are committed)."""

from __future__ import annotations

import io
import subprocess
import zipfile
from pathlib import Path


def pdf(*pages: str) -> bytes:
    """A minimal PDF, written by hand: one page per string, in Helvetica."""
    count = len(pages)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids ["
        + b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(count))
        + b"] /Count %d >>" % count,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, text in enumerate(pages):
        stream = b"BT /F1 14 Tf 72 720 Td (" + text.encode("latin-1") + b") Tj ET"
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * i)
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    return _pdf_file(objects)


def _pdf_file(objects: list[bytes]) -> bytes:
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def pdf_with_page_loop() -> bytes:
    """A page tree whose Pages node lists itself as its kid: walking it never ends."""
    return _pdf_file(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
            b"<< /Type /Pages /Parent 2 0 R /Kids [3 0 R 2 0 R] /Count 1 >>",
        ]
    )


def encrypted_pdf(word: str) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf(word))))
    writer.encrypt("a secret", algorithm="RC4-128")  # RC4 needs no extra crypto package
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def docx(word: str) -> bytes:
    import docx as python_docx

    document = python_docx.Document()
    document.add_heading("Quarterly notes", level=1)
    document.add_paragraph(f"The code word is {word}.")
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "cell"
    table.cell(0, 1).text = f"{word}table"
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def xlsx(word: str) -> bytes:
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Budget"
    sheet.append(["item", "amount"])
    sheet.append([word, 42])
    workbook.create_sheet("Empty")
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def pptx(word: str) -> bytes:
    import pptx as python_pptx
    from pptx.util import Inches

    presentation = python_pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    slide.shapes.title.text = "Roadmap"
    slide.placeholders[1].text = f"Ship {word} next"
    box = slide.shapes.add_textbox(Inches(1), Inches(5), Inches(4), Inches(1))
    box.text_frame.text = "a text box"
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def rezip(
    archive: bytes, replace: dict[str, bytes] | None = None, extra: dict[str, bytes] | None = None
) -> bytes:
    """The archive with members replaced (by name) and others added."""
    replace = replace or {}
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(archive)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for member in source.infolist():
            target.writestr(member.filename, replace.get(member.filename) or source.read(member))
        for name, data in (extra or {}).items():
            target.writestr(name, data)
    return out.getvalue()


def cjk_font() -> Path | None:
    """A font with Chinese glyphs, if fontconfig knows one (fonts-wqy-zenhei, fonts-noto-cjk)."""
    try:
        listed = subprocess.run(
            ["fc-list", ":lang=zh", "file"], capture_output=True, text=True, timeout=20
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in listed.splitlines():
        path = Path(line.split(":")[0].strip())
        if path.exists():
            return path
    return None


def text_image(lines: list[tuple[str, Path | None]], size: int = 48) -> bytes:
    """A PNG of black lines on white; each line in its font (None: Pillow's default)."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (1200, 120 + 110 * len(lines)), "white")
    draw = ImageDraw.Draw(image)
    for number, (text, font_path) in enumerate(lines):
        font = (
            ImageFont.truetype(str(font_path), size)
            if font_path
            else ImageFont.load_default(size=size)
        )
        draw.text((60, 60 + 110 * number), text, fill="black", font=font)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()

"""Word (.docx) and PowerPoint (.pptx) text, read after zipguard has passed the archive."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

Read = tuple[str, str]  # (text, detail)


def read_docx(path: Path, max_chars: int) -> Read:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    document = docx.Document(str(path))
    lines: list[str] = []
    paragraphs = 0
    # Body order: paragraphs and tables as they come, so a table's words stay in their place.
    for block in document.iter_inner_content():
        if isinstance(block, Paragraph):
            paragraphs += 1
            lines.append(block.text)
        elif isinstance(block, Table):
            lines.extend(_table_lines(block.rows))
        if _long_enough(lines, max_chars):
            break
    for section in document.sections:
        for part in (section.header, section.footer):
            lines.extend(paragraph.text for paragraph in part.paragraphs)
    text = _joined(lines)
    return text, "1 paragraph" if paragraphs == 1 else f"{paragraphs} paragraphs"


def read_pptx(path: Path, max_chars: int) -> Read:
    import pptx

    presentation = pptx.Presentation(str(path))
    lines: list[str] = []
    slides = 0
    for number, slide in enumerate(presentation.slides, start=1):
        slides = number
        lines.append(f"## Slide {number}")
        lines.extend(_shape_lines(slide.shapes))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            lines.append(slide.notes_slide.notes_text_frame.text)
        if _long_enough(lines, max_chars):
            break
    return _joined(lines), "1 slide" if slides == 1 else f"{slides} slides"


def _shape_lines(shapes: Iterable[Any], depth: int = 0) -> Iterator[str]:
    for shape in shapes:
        if shape.has_text_frame:
            yield shape.text_frame.text
        if getattr(shape, "has_table", False):
            yield from _table_lines(shape.table.rows)
        if depth < 8 and getattr(shape, "shapes", None) is not None:  # a group
            yield from _shape_lines(shape.shapes, depth + 1)


def _table_lines(rows: Iterable[Any]) -> Iterator[str]:
    for row in rows:
        yield "\t".join(cell.text for cell in row.cells)


def _long_enough(lines: list[str], max_chars: int) -> bool:
    return sum(len(line) + 1 for line in lines) >= max_chars


def _joined(lines: list[str]) -> str:
    return "\n".join(line for line in lines if line.strip()).strip()

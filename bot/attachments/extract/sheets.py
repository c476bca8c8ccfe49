"""Excel (.xlsx) cell values with openpyxl in read-only mode, read after zipguard.

A sheet's declared size (its `<dimension>`) is ignored: a file may declare a million rows by
16,384 columns, and openpyxl pads every row to the declared width. What is read is bounded by
the cells actually visited and by the text length."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.attachments.extract.result import Unreadable

Read = tuple[str, str]  # (text, detail)

MAX_CELLS = 2_000_000  # cells visited (empty ones too) across the workbook


def read_xlsx(path: Path, max_chars: int) -> Read:
    import openpyxl

    # A file object, not the path: openpyxl refuses a path without an .xlsx ending.
    with path.open("rb") as file:
        return _read(openpyxl.load_workbook(file, read_only=True, data_only=True), max_chars)


def _read(workbook: Any, max_chars: int) -> Read:
    try:
        lines: list[str] = []
        length = 0
        cells = 0
        stopped = ""
        sheets = workbook.worksheets
        for sheet in sheets:
            lines.append(f"## {sheet.title}")
            if hasattr(sheet, "reset_dimensions"):
                sheet.reset_dimensions()
            for row in sheet.iter_rows(values_only=True):
                cells += len(row) + 1
                if cells > MAX_CELLS:
                    stopped = f", stopped after {MAX_CELLS:,} cells"
                    break
                values = [str(value) for value in row if value is not None and value != ""]
                if values:
                    line = "\t".join(values)
                    lines.append(line)
                    length += len(line) + 1
                if length >= max_chars:
                    stopped = f", cut at {max_chars:,} characters"
                    break
            if stopped:
                break
    finally:
        workbook.close()
    text = "\n".join(lines).strip()
    if stopped and length == 0:
        raise Unreadable(f"the spreadsheet is too large (over {MAX_CELLS:,} cells)")
    count = len(sheets)
    return text, ("1 sheet" if count == 1 else f"{count} sheets") + stopped

"""Text put into a LIKE pattern as itself: `%`, `_` and the escape character lose their
meaning (use with `escape="\\"`)."""

from __future__ import annotations


def escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")

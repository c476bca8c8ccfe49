"""Markdown cut into parts that each fit one Feishu card, at natural breaks.

Feishu refuses a card message whose request body is over 30 KB, and a reply is never to fail
for being long: it goes out as several cards. A part ends at a blank line where it can; a
fenced code block cut in two is closed at the end of one part and opened again (same fence,
same language) at the start of the next; a table is cut between rows, its header repeated.
Sizes are counted as the request body carries the text: escaped once in the card's JSON and
again as the body's `content` string, which is written ASCII-only (`\\uXXXX` for the rest).
"""

from __future__ import annotations

import json
import re

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def body_bytes(text: str) -> int:
    """The bytes `text` takes in a card message's request body."""
    inner = json.dumps(text, ensure_ascii=False)[1:-1]
    return len(json.dumps(inner)) - 2


def split_markdown(text: str, budget: int) -> list[str]:
    """`text` in parts of at most `budget` body bytes each (see `body_bytes`), in order;
    put together again they say what `text` says."""
    if body_bytes(text) <= budget:
        return [text]
    return _Splitter(budget).run(text.split("\n"))


class _Splitter:
    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.parts: list[str] = []
        self.lines: list[str] = []
        self.size = 0
        self.fence: tuple[str, str] | None = None  # (opening line, its fence run) while open
        self.table_head: list[str] = []  # header row and rule while inside a table

    def run(self, lines: list[str]) -> list[str]:
        for index, line in enumerate(lines):
            rule_of_new_table = (
                self.fence is None
                and not self.table_head
                and _TABLE_RULE.match(line) is not None
                and index > 0
                and _TABLE_ROW.match(lines[index - 1]) is not None
            )
            for piece in _pieces(line, self.budget // 8):
                self._add(piece, keep_last=rule_of_new_table)
            self._track(line, lines[index - 1] if index else "", rule_of_new_table)
        self._flush(carry=0)
        return [part for part in self.parts if part.strip()]

    def _add(self, line: str, *, keep_last: bool) -> None:
        cost = body_bytes(line) + 2  # and its newline
        closing = body_bytes(self.fence[1]) + 2 if self.fence else 0
        if self.lines and self.size + cost + closing > self.budget:
            self._flush(carry=1 if keep_last else self._natural_break())
        self.lines.append(line)
        self.size += cost

    def _natural_break(self) -> int:
        """How many of the last lines move on to the next part: those after the last blank
        line of the part's second half, outside code and tables (none: cut here)."""
        if self.fence or self.table_head:
            return 0
        for back in range(len(self.lines) - 1, len(self.lines) // 2, -1):
            if not self.lines[back].strip():
                return len(self.lines) - back - 1
        return 0

    def _flush(self, *, carry: int) -> None:
        kept = self.lines[: len(self.lines) - carry] if carry else self.lines
        moved = self.lines[len(kept) :]
        part = list(kept)
        if self.fence is not None:
            part.append(self.fence[1])  # closed here, opened again below
        while part and not part[-1].strip():
            part.pop()
        if part:
            self.parts.append("\n".join(part))
        again: list[str] = []
        if self.fence is not None:
            again = [self.fence[0]]
        elif self.table_head and not (moved and _TABLE_RULE.match(moved[-1])):
            again = list(self.table_head)
        self.lines = again + moved
        self.size = sum(body_bytes(line) + 2 for line in self.lines)

    def _track(self, line: str, previous: str, rule_of_new_table: bool) -> None:
        fence = _FENCE.match(line)
        if self.fence is None:
            if fence is not None:
                self.fence, self.table_head = (line, fence.group(1)), []
            elif rule_of_new_table:
                self.table_head = [previous, line]
            elif not _TABLE_ROW.match(line):
                self.table_head = []
        elif fence is not None and not fence.group(2).strip():
            run = self.fence[1]
            if fence.group(1)[0] == run[0] and len(fence.group(1)) >= len(run):
                self.fence = None


def _pieces(line: str, most: int) -> list[str]:
    """A line too long for a part (a minified blob, a base64 block), cut in slices: a
    character takes at most 7 body bytes (a control character's `\\u0001`)."""
    if body_bytes(line) <= most:
        return [line]
    step = max(1, most // 7)
    return [line[at : at + step] for at in range(0, len(line), step)]

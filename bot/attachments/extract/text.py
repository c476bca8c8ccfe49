"""Plain text (Markdown, CSV, JSON, logs) and HTML. Charset: a BOM (UTF-8, UTF-16) says it;
else UTF-8; else GB18030, the Chinese superset of GBK and GB2312 that most Chinese Windows
files are in; else UTF-8 with replacement characters."""

from __future__ import annotations

import json
from html.parser import HTMLParser

from bot.attachments.extract.result import Unreadable

Read = tuple[str, str]  # (text, detail)

JSON_NAMES = (".json", ".jsonl", ".geojson")


def decode(data: bytes) -> tuple[str, str]:
    """(text, charset)."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace"), "UTF-8"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace"), "UTF-16"
    try:
        return data.decode("utf-8"), "UTF-8"
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("gb18030"), "GB18030"
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), "UTF-8 (with errors)"


def read_text(data: bytes, name: str, max_chars: int) -> Read:
    text, charset = decode(data)
    if name.lower().endswith(JSON_NAMES) or text.lstrip()[:1] in ("{", "["):
        _refuse_endless_nesting(text)
    return text[:max_chars], charset


def _refuse_endless_nesting(text: str) -> None:
    """A JSON file nested thousands deep has nothing to read and is made to hurt parsers (ours
    downstream included); JSON that does not parse is simply read as text."""
    try:
        json.loads(text)
    except RecursionError:
        raise Unreadable("the JSON is nested too deeply") from None
    except ValueError:
        return


def read_html(data: bytes, max_chars: int) -> Read:
    text, charset = decode(data)
    parser = _VisibleText()
    parser.feed(text)
    parser.close()
    return parser.text()[:max_chars], f"HTML, {charset}"


class _VisibleText(HTMLParser):
    """The words a browser shows: no script, style or template; blocks on their own lines."""

    HIDDEN = frozenset({"script", "style", "template", "noscript", "head", "svg", "iframe"})
    BLOCKS = frozenset(
        "p div br li tr h1 h2 h3 h4 h5 h6 title table ul ol section article header footer "
        "blockquote pre hr dt dd".split()
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._hidden = 0
        self._parts: list[str] = []
        self._title: list[str] = []
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in self.HIDDEN:
            self._hidden += 1
        if tag in self.BLOCKS:
            self._parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in self.HIDDEN and self._hidden:
            self._hidden -= 1
        if tag in self.BLOCKS:
            self._parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title.append(data)
        elif not self._hidden:
            self._parts.append(data)

    def text(self) -> str:
        lines = (" ".join(line.split()) for line in "".join(self._parts).splitlines())
        body = "\n".join(line for line in lines if line)
        title = " ".join("".join(self._title).split())
        return f"{title}\n{body}".strip() if title else body

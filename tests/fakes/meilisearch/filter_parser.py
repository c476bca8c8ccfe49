"""Filter expressions: milli's grammar (lexer, quoting/escapes, recursive-descent parser)
into a tuple tree, and the attributes/operators a tree uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class FilterError(ValueError):
    pass


_KEYWORDS = {
    "AND",
    "OR",
    "IN",
    "NOT",
    "TO",
    "EXISTS",
    "IS",
    "NULL",
    "EMPTY",
    "CONTAINS",
    "STARTS",
    "WITH",
    "_geoRadius",
    "_geoBoundingBox",
}
_SIMPLE_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "r": "\r", "t": "\t", "0": "\0"}
_COMPARISONS = ("=", "!=", ">=", "<=", ">", "<")


@dataclass(frozen=True)
class _Tok:
    kind: str  # word | str | op | ( | ) | [ | ] | ,
    text: str
    pos: int


def _lex(expr: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i = 0
    while i < len(expr):
        c = expr[i]
        if c.isspace():
            i += 1
        elif c in "()[],":
            toks.append(_Tok(c, c, i))
            i += 1
        elif expr.startswith(("!=", ">=", "<="), i):
            toks.append(_Tok("op", expr[i : i + 2], i))
            i += 2
        elif c in "=<>":
            toks.append(_Tok("op", c, i))
            i += 1
        elif c in "'\"":
            value, end = _read_quoted(expr, i)
            toks.append(_Tok("str", value, i))
            i = end
        elif c.isalnum() or c in "_-.":
            start = i
            while i < len(expr) and (expr[i].isalnum() or expr[i] in "_-."):
                i += 1
            toks.append(_Tok("word", expr[start:i], start))
        else:
            raise FilterError(f"Was expecting a value but instead got `{c}` at position {i}.")
    return toks


def _read_quoted(expr: str, start: int) -> tuple[str, int]:
    """milli's `quoted_by`: a backslash protects the next character; `\\<quote>` becomes the
    quote; then the whole value is unescaped Rust-style."""
    quote = expr[start]
    i, escaped_quote = start + 1, False
    while i < len(expr):
        if expr[i] == quote:
            raw = expr[start + 1 : i]
            if escaped_quote:
                raw = raw.replace("\\" + quote, quote)
            return _unescape(raw), i + 1
        if expr[i] == "\\":
            if i + 1 >= len(expr):
                raise FilterError("Malformed value: a value cannot end with a lone `\\`.")
            escaped_quote |= expr[i + 1] == quote
            i += 2
        else:
            i += 1
    raise FilterError(
        f"Expression `{expr[start:]}` is missing the following closing delimiter: `{quote}`."
    )


def _unescape(raw: str) -> str:
    out, i = [], 0
    while i < len(raw):
        if raw[i] != "\\":
            out.append(raw[i])
            i += 1
            continue
        nxt = raw[i + 1] if i + 1 < len(raw) else ""
        if nxt in _SIMPLE_ESCAPES and nxt:
            out.append(_SIMPLE_ESCAPES[nxt])
            i += 2
        elif nxt == "u" and raw.startswith("{", i + 2) and "}" in raw[i + 3 :]:
            close = raw.index("}", i + 3)
            out.append(chr(int(raw[i + 3 : close], 16)))
            i = close + 1
        else:
            raise FilterError(f"Malformed value: invalid escape sequence `\\{nxt}`.")
    return "".join(out)


class _FilterParser:
    def __init__(self, expr: str) -> None:
        self.expr = expr
        self.toks = _lex(expr)
        self.i = 0

    def parse(self) -> Any:
        if not self.toks:
            raise FilterError("Sending an empty filter is forbidden.")
        node = self._or()
        if self.i != len(self.toks):
            tok = self.toks[self.i]
            raise FilterError(
                f"Found unexpected characters at the end of the filter: `{self.expr[tok.pos :]}`. "
                "You probably forgot an `OR` or an `AND` rule."
            )
        return node

    def _peek(self, kind: str | None = None, text: str | None = None, ahead: int = 0) -> bool:
        j = self.i + ahead
        if j >= len(self.toks):
            return False
        tok = self.toks[j]
        return (kind is None or tok.kind == kind) and (text is None or tok.text == text)

    def _next(self) -> _Tok:
        if self.i >= len(self.toks):
            raise FilterError(f"Unexpected end of filter `{self.expr}`.")
        self.i += 1
        return self.toks[self.i - 1]

    def _expect(self, kind: str, text: str | None = None) -> _Tok:
        if not self._peek(kind, text):
            where = self.toks[self.i].pos if self.i < len(self.toks) else len(self.expr)
            raise FilterError(f"Expected `{text or kind}` at position {where} in `{self.expr}`.")
        return self._next()

    def _or(self) -> Any:
        nodes = [self._and()]
        while self._peek("word", "OR"):
            self._next()
            nodes.append(self._and())
        return ("or", nodes) if len(nodes) > 1 else nodes[0]

    def _and(self) -> Any:
        nodes = [self._not()]
        while self._peek("word", "AND"):
            self._next()
            nodes.append(self._not())
        return ("and", nodes) if len(nodes) > 1 else nodes[0]

    def _not(self) -> Any:
        if self._peek("word", "NOT"):
            self._next()
            return ("not", self._not())
        return self._primary()

    def _value(self) -> str:
        tok = self._next()
        if tok.kind == "str" or (tok.kind == "word" and tok.text not in _KEYWORDS):
            return tok.text
        raise FilterError(f"Was expecting a value but instead got `{tok.text}` at {tok.pos}.")

    def _primary(self) -> Any:
        if self._peek("("):
            self._next()
            node = self._or()
            self._expect(")")
            return node
        attribute = self._value()
        if self._peek("word", "IN"):
            self._next()
            return ("in", attribute, self._list())
        if self._peek("word", "NOT") and self._peek("word", "IN", ahead=1):
            self.i += 2
            return ("not", ("in", attribute, self._list()))
        if self._peek("word", "NOT") and self._peek("word", "EXISTS", ahead=1):
            self.i += 2
            return ("not", ("exists", attribute))
        if self._peek("word", "EXISTS"):
            self._next()
            return ("exists", attribute)
        if self._peek("word", "IS"):
            self._next()
            negate = self._peek("word", "NOT") and bool(self._next())
            kind = self._next().text
            if kind not in ("NULL", "EMPTY"):
                raise FilterError(f"Was expecting `NULL` or `EMPTY` after `IS` in `{self.expr}`.")
            node = ("is_" + kind.lower(), attribute)
            return ("not", node) if negate else node
        if self._peek("op"):
            op = self._next().text
            return ("cmp", attribute, op, self._value())
        if self._peek(ahead=1, kind="word", text="TO"):
            low = self._value()
            self._next()
            return ("to", attribute, low, self._value())
        raise FilterError(
            "Was expecting an operation `=`, `!=`, `>=`, `>`, `<=`, `<`, `IN`, `NOT IN`, `TO`, "
            f"`EXISTS`, `NOT EXISTS`, `IS NULL`, `IS NOT NULL`, `IS EMPTY`, `IS NOT EMPTY` "
            f"after `{attribute}` in `{self.expr}`."
        )

    def _list(self) -> list[str]:
        self._expect("[")
        values: list[str] = []
        while not self._peek("]"):
            values.append(self._value())
            if not self._peek("]"):
                self._expect(",")
        self._expect("]")
        return values


def parse_filter(expr: Any) -> Any:
    """A string, or an array of strings and arrays of strings (outer AND, inner OR)."""
    if isinstance(expr, str):
        return _FilterParser(expr).parse()
    if isinstance(expr, list):
        parts = []
        for item in expr:
            if isinstance(item, list):
                parts.append(("or", [parse_filter(s) for s in item if isinstance(s, str)]))
            elif isinstance(item, str):
                parts.append(parse_filter(item))
            else:
                raise FilterError("Invalid syntax for the filter parameter: expected a string.")
        return ("and", parts)
    raise FilterError("Invalid syntax for the filter parameter: expected a string or an array.")


def filter_attributes(node: Any) -> list[tuple[str, str]]:
    """(attribute, operator) pairs used in a parsed filter."""
    kind = node[0]
    if kind in ("and", "or"):
        return [pair for child in node[1] for pair in filter_attributes(child)]
    if kind == "not":
        return filter_attributes(node[1])
    operator = {
        "in": "IN",
        "exists": "EXISTS",
        "is_null": "IS NULL",
        "is_empty": "IS EMPTY",
        "to": "TO",
    }.get(kind) or node[2]
    return [(node[1], operator)]

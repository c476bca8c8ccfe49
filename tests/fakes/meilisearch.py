"""A fake Meilisearch server for tests: a real HTTP server on 127.0.0.1, on a random port, in
its own thread, so the official (blocking) client can talk to it from any test.

Written from the Meilisearch documentation (API reference / OpenAPI 1.x, "Known
limitations", the filter expression reference) and milli's filter parser, not from our
adapter. It covers what a search adapter needs: health/version, indexes, settings (PATCH
merges, null resets), documents (add-or-replace, delete by ids / filter / all, fetch), tasks,
search with filters, ranking scores, crop/highlight, distinct, offset/limit, auth.

Faithful on purpose:
  * writes return 202 + a summarized task; the change happens when the task is processed,
    which is immediately unless `pause_tasks()` was called;
  * document ids must match `[A-Za-z0-9_-]{1,511}` (or be non-negative integers), otherwise
    the task fails with `invalid_document_id` and nothing of the batch is applied;
  * filters: `=`, `!=`, `IN`, `NOT IN`, `EXISTS`, `AND`, `OR`, `NOT`, parentheses, comparisons;
    quoted values unescaped like milli (`\\"` first, then Rust-style escapes); string equality
    is case-insensitive after NFKD and trimming (milli's `normalize_facet`); a filter on a
    non-filterable attribute, an operator its granular features forbid, or bad syntax gives
    400 `invalid_search_filter`;
  * only the first 10 query words count; the last word is a prefix unless followed by a space;
    `matchingStrategy` last / all / frequency;
  * with a master key, every route but /health wants `Authorization: Bearer <key>`
    (401 `missing_authorization_header` / 403 `invalid_api_key`).

Approximations: Latin words are runs of letters and digits (every punctuation character
separates, as in charabia); a run of CJK characters in the query is one word matched as a
substring; no typo tolerance, no phrase search, no negation; ranking is words matched, then
attribute order, then insertion order; `_rankingScore` is the matched-word fraction, slightly
reduced for prefix and lower-priority-attribute matches.
"""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
import json
import re
import threading
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

_DOC_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,511}")
_INDEX_UID_RE = re.compile(r"[A-Za-z0-9_-]{1,400}")
_CJK = "\u3005\u3007\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_QUERY_WORD_RE = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_DOC_WORD_RE = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
_CJK_RE = re.compile(rf"[{_CJK}]")
QUERY_WORD_LIMIT = 10

_DEFAULT_SETTINGS: dict[str, Any] = {
    "displayedAttributes": ["*"],
    "searchableAttributes": ["*"],
    "filterableAttributes": [],
    "sortableAttributes": [],
    "rankingRules": ["words", "typo", "proximity", "attribute", "sort", "exactness"],
    "stopWords": [],
    "nonSeparatorTokens": [],
    "separatorTokens": [],
    "dictionary": [],
    "synonyms": {},
    "distinctAttribute": None,
    "proximityPrecision": "byWord",
    "typoTolerance": {
        "enabled": True,
        "minWordSizeForTypos": {"oneTypo": 5, "twoTypos": 9},
        "disableOnWords": [],
        "disableOnAttributes": [],
        "disableOnNumbers": False,
    },
    "faceting": {"maxValuesPerFacet": 100, "sortFacetValuesBy": {"*": "alpha"}},
    "pagination": {"maxTotalHits": 1000},
    "embedders": {},
    "searchCutoffMs": None,
    "localizedAttributes": None,
    "facetSearch": True,
    "prefixSearch": "indexingTime",
}
_MERGED_SETTINGS = {"typoTolerance", "faceting", "pagination"}
# ISO 639-1 -> 639-3, as in meilisearch-types' locales.rs; settings echo the 639-3 form.
_LOCALE_639_3 = dict(
    pair.split(":")
    for pair in (
        "af:afr ak:aka am:amh ar:ara az:aze be:bel bn:ben bg:bul ca:cat cs:ces da:dan "
        "de:deu el:ell en:eng eo:epo et:est fi:fin fr:fra gu:guj he:heb hi:hin hr:hrv "
        "hu:hun hy:hye id:ind it:ita jv:jav ja:jpn kn:kan ka:kat km:khm ko:kor la:lat "
        "lv:lav lt:lit ml:mal mr:mar mk:mkd my:mya ne:nep nl:nld nb:nob or:ori pa:pan "
        "fa:pes pl:pol pt:por ro:ron ru:rus si:sin sk:slk sl:slv sn:sna es:spa sr:srp "
        "sv:swe ta:tam te:tel tl:tgl th:tha tk:tuk tr:tur uk:ukr ur:urd uz:uzb vi:vie "
        "yi:yid zh:zho zu:zul "
    ).split()
)
_LOCALES = {*_LOCALE_639_3, *_LOCALE_639_3.values(), "cmn"}
_SEARCH_PARAMS = {
    "q",
    "offset",
    "limit",
    "attributesToRetrieve",
    "attributesToCrop",
    "cropLength",
    "cropMarker",
    "attributesToHighlight",
    "highlightPreTag",
    "highlightPostTag",
    "showMatchesPosition",
    "filter",
    "distinct",
    "matchingStrategy",
    "attributesToSearchOn",
    "locales",
    "showRankingScore",
    "showRankingScoreDetails",
    "rankingScoreThreshold",
}
_UNSUPPORTED_SEARCH_PARAMS = {"page", "hitsPerPage", "sort", "facets", "hybrid", "vector"}


# -- filter expressions (milli's grammar, evaluated in Python) --------------------------------


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
_MAX_FACET_BYTES = 468


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


def _normalize_facet(value: str) -> str:
    """milli's `normalize_facet`: NFKD, trimmed, lowercased, cut to 468 bytes."""
    normalized = unicodedata.normalize("NFKD", value.strip()).lower()
    return normalized.encode("utf-8")[:_MAX_FACET_BYTES].decode("utf-8", "ignore")


def _lookup(doc: dict[str, Any], attribute: str) -> tuple[bool, Any]:
    if attribute in doc:
        return True, doc[attribute]
    current: Any = doc
    for part in attribute.split("."):
        if not isinstance(current, dict) or part not in current:
            return False, None
        current = current[part]
    return True, current


def _as_number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _compare(doc_value: Any, op: str, wanted: str) -> bool:
    values = doc_value if isinstance(doc_value, list) else [doc_value]
    for value in values:
        if isinstance(value, bool):
            equal = wanted.lower() == str(value).lower()
            if op == "=" and equal:
                return True
            continue
        if isinstance(value, int | float):
            number = _as_number(wanted)
            if number is None:
                continue
            ok = {
                "=": value == number,
                ">": value > number,
                "<": value < number,
                ">=": value >= number,
                "<=": value <= number,
            }[op]
        elif isinstance(value, str):
            a, b = _normalize_facet(value), _normalize_facet(wanted)
            ok = {"=": a == b, ">": a > b, "<": a < b, ">=": a >= b, "<=": a <= b}[op]
        else:
            continue
        if ok:
            return True
    return False


def matches(node: Any, doc: dict[str, Any]) -> bool:
    kind = node[0]
    if kind == "and":
        return all(matches(child, doc) for child in node[1])
    if kind == "or":
        return any(matches(child, doc) for child in node[1])
    if kind == "not":
        return not matches(node[1], doc)
    present, value = _lookup(doc, node[1])
    if kind == "exists":
        return present
    if kind == "is_null":
        return present and value is None
    if kind == "is_empty":
        return present and value in ("", [], {})
    if not present or value is None:
        return False
    if kind == "in":
        return any(_compare(value, "=", wanted) for wanted in node[2])
    if kind == "to":
        return _compare(value, ">=", node[2]) and _compare(value, "<=", node[3])
    op, wanted = node[2], node[3]
    if op == "!=":
        return not _compare(value, "=", wanted)
    return _compare(value, op, wanted)


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, type_: str = "invalid_request"):
        super().__init__(message)
        self.status, self.code, self.message, self.type = status, code, message, type_

    def body(self) -> dict[str, str]:
        return {
            "message": self.message,
            "code": self.code,
            "type": self.type,
            "link": f"https://docs.meilisearch.com/errors#{self.code}",
        }


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class _Index:
    uid: str
    primary_key: str | None
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)
    settings: dict[str, Any] = field(default_factory=lambda: copy.deepcopy(_DEFAULT_SETTINGS))
    documents: dict[str, dict[str, Any]] = field(default_factory=dict)

    def info(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "primaryKey": self.primary_key,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
        }


@dataclass
class _Task:
    uid: int
    index_uid: str | None
    type: str
    details: dict[str, Any]
    apply: Callable[[], None]
    status: str = "enqueued"
    error: dict[str, str] | None = None
    enqueued_at: str = field(default_factory=_now)
    started_at: str | None = None
    finished_at: str | None = None

    def view(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "batchUid": self.uid if self.started_at else None,
            "indexUid": self.index_uid,
            "status": self.status,
            "type": self.type,
            "canceledBy": None,
            "details": self.details,
            "error": self.error,
            "duration": "PT0.001S" if self.finished_at else None,
            "enqueuedAt": self.enqueued_at,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
        }

    def summary(self) -> dict[str, Any]:
        return {
            "taskUid": self.uid,
            "indexUid": self.index_uid,
            "status": "enqueued",
            "type": self.type,
            "enqueuedAt": self.enqueued_at,
        }


class FakeMeilisearch:
    """`with FakeMeilisearch(master_key="k") as fake: MeiliSearchIndex(fake.url, "k")`."""

    def __init__(self, master_key: str | None = None) -> None:
        self.master_key = master_key
        self.url = ""
        self.requests: list[tuple[str, str]] = []  # (method, path), for assertions
        self._lock = threading.RLock()
        self._indexes: dict[str, _Index] = {}
        self._tasks: list[_Task] = []
        self._paused = False
        self._fail_next: list[tuple[str, str]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()

    # -- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> FakeMeilisearch:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._serve, name="fake-meilisearch", daemon=True)
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("fake Meilisearch did not start")

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        app = web.Application(middlewares=[self._middleware], client_max_size=100 * 1024**2)
        self._routes(app)
        runner = web.AppRunner(app)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        host, port = runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        self._started.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(runner.cleanup())
            loop.close()

    # -- test controls --------------------------------------------------------------------

    def pause_tasks(self) -> None:
        """New tasks stay `enqueued` (the oldest shows `processing`) until `resume_tasks`."""
        with self._lock:
            self._paused = True

    def resume_tasks(self) -> None:
        with self._lock:
            self._paused = False
            self._process()

    def fail_next_task(self, code: str = "internal", message: str = "injected failure") -> None:
        with self._lock:
            self._fail_next.append((code, message))

    def documents(self, index_uid: str) -> list[dict[str, Any]]:
        with self._lock:
            index = self._indexes.get(index_uid)
            return [copy.deepcopy(d) for d in index.documents.values()] if index else []

    def tasks(self, index_uid: str | None = None, type_: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [
                t.view()
                for t in self._tasks
                if (index_uid is None or t.index_uid == index_uid)
                and (type_ is None or t.type == type_)
            ]

    # -- HTTP plumbing --------------------------------------------------------------------

    @web.middleware
    async def _middleware(
        self, request: web.Request, handler: Callable[[web.Request], Any]
    ) -> web.StreamResponse:
        self.requests.append((request.method, request.path))
        try:
            self._check_auth(request)
            response: web.StreamResponse = await handler(request)
            return response
        except ApiError as exc:
            return web.json_response(exc.body(), status=exc.status)

    def _check_auth(self, request: web.Request) -> None:
        if self.master_key is None or request.path == "/health":
            return
        header = request.headers.get("Authorization")
        if not header:
            raise ApiError(
                401,
                "missing_authorization_header",
                "The Authorization header is missing. It must use the bearer authorization method.",
                "auth",
            )
        scheme, _, key = header.partition(" ")
        if scheme != "Bearer" or key != self.master_key:
            raise ApiError(403, "invalid_api_key", "The provided API key is invalid.", "auth")

    def _routes(self, app: web.Application) -> None:
        r = app.router
        r.add_get("/health", self._health)
        r.add_get("/version", self._version)
        r.add_get("/indexes", self._list_indexes)
        r.add_post("/indexes", self._create_index)
        r.add_get("/indexes/{uid}", self._get_index)
        r.add_delete("/indexes/{uid}", self._delete_index)
        r.add_get("/indexes/{uid}/settings", self._get_settings)
        r.add_patch("/indexes/{uid}/settings", self._patch_settings)
        r.add_post("/indexes/{uid}/documents", self._add_documents)
        r.add_delete("/indexes/{uid}/documents", self._delete_all)
        r.add_post("/indexes/{uid}/documents/delete-batch", self._delete_batch)
        r.add_post("/indexes/{uid}/documents/delete", self._delete_by_filter)
        r.add_post("/indexes/{uid}/documents/fetch", self._fetch_documents)
        r.add_get("/indexes/{uid}/documents/{doc_id}", self._get_document)
        r.add_get("/indexes/{uid}/stats", self._stats)
        r.add_post("/indexes/{uid}/search", self._search)
        r.add_get("/tasks", self._list_tasks)
        r.add_get("/tasks/{task_uid}", self._get_task)

    @staticmethod
    async def _json(request: web.Request) -> Any:
        content_type = request.headers.get("Content-Type")
        if content_type is None:
            raise ApiError(415, "missing_content_type", "A Content-Type header is missing.")
        if content_type.split(";")[0].strip() != "application/json":
            raise ApiError(
                415,
                "invalid_content_type",
                f"The Content-Type `{content_type}` is invalid. Accepted values for the "
                "Content-Type header are: `application/json`, `application/x-ndjson`, `text/csv`",
            )
        try:
            return json.loads(await request.text())
        except json.JSONDecodeError as exc:
            raise ApiError(
                400, "malformed_payload", f"The json payload provided is malformed. {exc}"
            ) from exc

    def _index(self, uid: str) -> _Index:
        index = self._indexes.get(uid)
        if index is None:
            raise ApiError(404, "index_not_found", f"Index `{uid}` not found.")
        return index

    def _enqueue(
        self, index_uid: str | None, type_: str, details: dict[str, Any], apply: Callable[[], None]
    ) -> web.Response:
        with self._lock:
            task = _Task(len(self._tasks), index_uid, type_, details, apply)
            self._tasks.append(task)
            self._process()
            return web.json_response(task.summary(), status=202)

    def _process(self) -> None:
        """Run enqueued tasks in order, unless paused. Caller holds the lock."""
        for task in self._tasks:
            if task.status not in ("enqueued", "processing"):
                continue
            if self._paused:
                task.status = "processing"
                task.started_at = task.started_at or _now()
                return
            task.started_at = task.started_at or _now()
            try:
                if self._fail_next:
                    code, message = self._fail_next.pop(0)
                    raise ApiError(500, code, message, "internal")
                task.apply()
                task.status = "succeeded"
            except ApiError as exc:
                task.status, task.error = "failed", exc.body()
            task.finished_at = _now()

    # -- routes: server, indexes, settings ------------------------------------------------

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "available"})

    async def _version(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"commitSha": "fake", "commitDate": "2025-01-01T00:00:00Z", "pkgVersion": "1.16.0"}
        )

    async def _list_indexes(self, request: web.Request) -> web.Response:
        with self._lock:
            results = [i.info() for i in self._indexes.values()]
        return web.json_response(
            {"results": results, "offset": 0, "limit": 20, "total": len(results)}
        )

    async def _create_index(self, request: web.Request) -> web.Response:
        body = await self._json(request)
        uid, primary_key = body.get("uid"), body.get("primaryKey")
        if not isinstance(uid, str) or not _INDEX_UID_RE.fullmatch(uid):
            raise ApiError(400, "invalid_index_uid", f"`{uid}` is not a valid index uid.")

        def apply() -> None:
            if uid in self._indexes:
                raise ApiError(400, "index_already_exists", f"Index `{uid}` already exists.")
            self._indexes[uid] = _Index(uid, primary_key)

        return self._enqueue(uid, "indexCreation", {"primaryKey": primary_key}, apply)

    async def _get_index(self, request: web.Request) -> web.Response:
        with self._lock:
            return web.json_response(self._index(request.match_info["uid"]).info())

    async def _delete_index(self, request: web.Request) -> web.Response:
        uid = request.match_info["uid"]

        def apply() -> None:
            self._index(uid)
            del self._indexes[uid]

        return self._enqueue(uid, "indexDeletion", {"deletedDocuments": None}, apply)

    async def _get_settings(self, request: web.Request) -> web.Response:
        with self._lock:
            return web.json_response(copy.deepcopy(self._index(request.match_info["uid"]).settings))

    async def _patch_settings(self, request: web.Request) -> web.Response:
        uid = request.match_info["uid"]
        body = await self._json(request)
        if not isinstance(body, dict):
            raise ApiError(400, "bad_request", "Settings must be a JSON object.")
        changes = {key: _validate_setting(key, value) for key, value in body.items()}

        def apply() -> None:
            index = self._indexes.setdefault(uid, _Index(uid, None))
            for key, value in changes.items():
                if value is None:
                    index.settings[key] = copy.deepcopy(_DEFAULT_SETTINGS[key])
                elif key in _MERGED_SETTINGS:
                    index.settings[key] = {**index.settings[key], **value}
                else:
                    index.settings[key] = value
            index.updated_at = _now()

        return self._enqueue(uid, "settingsUpdate", body, apply)

    # -- routes: documents ----------------------------------------------------------------

    async def _add_documents(self, request: web.Request) -> web.Response:
        uid = request.match_info["uid"]
        body = await self._json(request)
        docs = body if isinstance(body, list) else [body]
        if not all(isinstance(d, dict) for d in docs):
            raise ApiError(400, "malformed_payload", "Documents must be JSON objects.")
        asked_key = request.query.get("primaryKey")

        def apply() -> None:
            index = self._indexes.setdefault(uid, _Index(uid, asked_key))
            key = _resolve_primary_key(index, asked_key, docs)
            prepared = {_document_id(doc, key): copy.deepcopy(doc) for doc in docs}
            index.primary_key = key
            index.documents.update(prepared)
            index.updated_at = _now()

        details = {"receivedDocuments": len(docs), "indexedDocuments": None}
        return self._enqueue(uid, "documentAdditionOrUpdate", details, apply)

    async def _delete_all(self, request: web.Request) -> web.Response:
        uid = request.match_info["uid"]

        def apply() -> None:
            self._index(uid).documents.clear()

        return self._enqueue(uid, "documentDeletion", {"deletedDocuments": None}, apply)

    async def _delete_batch(self, request: web.Request) -> web.Response:
        uid = request.match_info["uid"]
        ids = await self._json(request)
        if not isinstance(ids, list):
            raise ApiError(400, "bad_request", "Expected an array of document ids.")

        def apply() -> None:
            documents = self._index(uid).documents
            for doc_id in ids:
                documents.pop(str(doc_id), None)

        return self._enqueue(uid, "documentDeletion", {"providedIds": len(ids)}, apply)

    async def _delete_by_filter(self, request: web.Request) -> web.Response:
        uid = request.match_info["uid"]
        body = await self._json(request)
        if not isinstance(body, dict) or body.get("filter") in (None, "", []):
            raise ApiError(400, "missing_document_filter", "Missing field `filter`")
        try:
            tree = parse_filter(body["filter"])
        except FilterError as exc:
            raise ApiError(400, "invalid_document_filter", str(exc)) from exc

        def apply() -> None:
            index = self._index(uid)
            try:
                _check_filterable(index, tree)
            except FilterError as exc:
                raise ApiError(400, "invalid_document_filter", f"Index `{uid}`: {exc}") from exc
            doomed = [k for k, d in index.documents.items() if matches(tree, d)]
            for doc_id in doomed:
                del index.documents[doc_id]

        details = {"originalFilter": json.dumps(body["filter"]), "deletedDocuments": None}
        return self._enqueue(uid, "documentDeletion", details, apply)

    async def _fetch_documents(self, request: web.Request) -> web.Response:
        body = await self._json(request) or {}
        with self._lock:
            index = self._index(request.match_info["uid"])
            docs = list(index.documents.values())
            if body.get("filter") not in (None, "", []):
                try:
                    tree = parse_filter(body["filter"])
                    _check_filterable(index, tree)
                except FilterError as exc:
                    raise ApiError(400, "invalid_document_filter", str(exc)) from exc
                docs = [d for d in docs if matches(tree, d)]
            offset, limit = int(body.get("offset", 0)), int(body.get("limit", 20))
            fields = body.get("fields")
            page = [_select(d, fields or ["*"]) for d in docs[offset : offset + limit]]
        return web.json_response(
            {"results": page, "offset": offset, "limit": limit, "total": len(docs)}
        )

    async def _get_document(self, request: web.Request) -> web.Response:
        with self._lock:
            index = self._index(request.match_info["uid"])
            doc = index.documents.get(request.match_info["doc_id"])
            if doc is None:
                raise ApiError(
                    404,
                    "document_not_found",
                    f"Document `{request.match_info['doc_id']}` not found.",
                )
            return web.json_response(doc)

    async def _stats(self, request: web.Request) -> web.Response:
        with self._lock:
            index = self._index(request.match_info["uid"])
            distribution: dict[str, int] = {}
            for doc in index.documents.values():
                for key in doc:
                    distribution[key] = distribution.get(key, 0) + 1
            return web.json_response(
                {
                    "numberOfDocuments": len(index.documents),
                    "isIndexing": False,
                    "fieldDistribution": distribution,
                }
            )

    # -- routes: tasks --------------------------------------------------------------------

    async def _get_task(self, request: web.Request) -> web.Response:
        task_uid = int(request.match_info["task_uid"])
        with self._lock:
            if not 0 <= task_uid < len(self._tasks):
                raise ApiError(404, "task_not_found", f"Task `{task_uid}` not found.")
            return web.json_response(self._tasks[task_uid].view())

    async def _list_tasks(self, request: web.Request) -> web.Response:
        def values(name: str) -> set[str] | None:
            raw = request.query.get(name)
            return set(raw.split(",")) if raw else None

        uids, types, statuses = values("indexUids"), values("types"), values("statuses")
        limit = int(request.query.get("limit", 20))
        with self._lock:
            found = [
                t.view()
                for t in reversed(self._tasks)
                if (uids is None or t.index_uid in uids)
                and (types is None or t.type in types)
                and (statuses is None or t.status in statuses)
            ]
        page = found[:limit]
        return web.json_response(
            {
                "results": page,
                "total": len(found),
                "limit": limit,
                "from": page[0]["uid"] if page else None,
                "next": found[limit]["uid"] if len(found) > limit else None,
            }
        )

    # -- routes: search -------------------------------------------------------------------

    async def _search(self, request: web.Request) -> web.Response:
        body = await self._json(request)
        if not isinstance(body, dict):
            raise ApiError(400, "bad_request", "The search body must be a JSON object.")
        for key in body:
            if key in _UNSUPPORTED_SEARCH_PARAMS:
                raise ApiError(400, "bad_request", f"The fake does not implement `{key}`.")
            if key not in _SEARCH_PARAMS:
                raise ApiError(400, "bad_request", f"Unknown field `{key}`")
        with self._lock:
            index = self._index(request.match_info["uid"])
            result = _run_search(index, body)
        return web.json_response(result)


# -- settings, documents ----------------------------------------------------------------


def _validate_setting(key: str, value: Any) -> Any:
    if key not in _DEFAULT_SETTINGS:
        raise ApiError(
            400,
            "bad_request",
            f"Unknown field `{key}`: expected one of "
            + ", ".join(f"`{k}`" for k in _DEFAULT_SETTINGS),
        )
    if value is None:
        return None
    if key == "filterableAttributes":
        return [_filterable_rule(rule) for rule in _list_of(key, value)]
    if key == "localizedAttributes":
        for rule in _list_of(key, value):
            patterns, locales = rule.get("attributePatterns"), rule.get("locales")
            if not isinstance(patterns, list) or not isinstance(locales, list):
                raise ApiError(
                    400,
                    "invalid_settings_localized_attributes",
                    "Each rule needs `attributePatterns` and `locales` arrays.",
                )
            bad = [loc for loc in locales if loc not in _LOCALES]
            rule["locales"] = [_LOCALE_639_3.get(loc, loc) for loc in locales]
            if bad:
                raise ApiError(
                    400,
                    "invalid_settings_localized_attributes",
                    f"Unknown value `{bad[0]}` at `.localizedAttributes[0].locales`",
                )
    if key == "typoTolerance":
        allowed = set(_DEFAULT_SETTINGS["typoTolerance"])
        unknown = set(value) - allowed
        if unknown:
            raise ApiError(
                400,
                "invalid_settings_typo_tolerance",
                f"Unknown field `{sorted(unknown)[0]}` inside `.typoTolerance`",
            )
    if key in ("searchableAttributes", "displayedAttributes"):
        _list_of(key, value)
    return value


def _list_of(key: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        code = "invalid_settings_" + re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()
        raise ApiError(400, code, f"Invalid value type at `.{key}`: expected an array")
    return value


def _filterable_rule(rule: Any) -> Any:
    if isinstance(rule, str):
        return rule
    if not isinstance(rule, dict) or not isinstance(rule.get("attributePatterns"), list):
        raise ApiError(
            400,
            "invalid_settings_filterable_attributes",
            "Each rule is a string or an object with `attributePatterns`.",
        )
    features = rule.get("features") or {}
    filter_features = features.get("filter") or {}
    return {
        "attributePatterns": rule["attributePatterns"],
        "features": {
            "facetSearch": bool(features.get("facetSearch", False)),
            "filter": {
                "equality": bool(filter_features.get("equality", True)),
                "comparison": bool(filter_features.get("comparison", False)),
            },
        },
    }


def _resolve_primary_key(index: _Index, asked: str | None, docs: list[dict[str, Any]]) -> str:
    if index.primary_key is not None:
        if asked is not None and asked != index.primary_key:
            raise ApiError(
                400,
                "index_primary_key_already_exists",
                f"Index `{index.uid}`: Index already has a primary key: `{index.primary_key}`.",
            )
        return index.primary_key
    if asked is not None:
        return asked
    candidates = sorted({k for d in docs for k in d if k.lower().endswith("id")})
    if len(candidates) == 1:
        return candidates[0]
    if candidates:
        raise ApiError(
            400,
            "index_primary_key_multiple_candidates_found",
            "The primary key inference failed as the engine found "
            f"{len(candidates)} fields ending with `id` in their names.",
        )
    raise ApiError(
        400,
        "index_primary_key_no_candidate_found",
        "The primary key inference failed as the engine did not find any field "
        "ending with `id` in its name.",
    )


def _document_id(doc: dict[str, Any], key: str) -> str:
    if key not in doc:
        raise ApiError(
            400,
            "missing_document_id",
            f"Document doesn't have a `{key}` attribute: `{json.dumps(doc)[:200]}`.",
        )
    value = doc[key]
    valid = (isinstance(value, int) and not isinstance(value, bool) and value >= 0) or (
        isinstance(value, str) and _DOC_ID_RE.fullmatch(value) is not None
    )
    if not valid:
        raise ApiError(
            400,
            "invalid_document_id",
            f"Document identifier `{json.dumps(value)}` is invalid. A document "
            "identifier can be of type integer or string, only composed of "
            "alphanumeric characters (a-z A-Z 0-9), hyphens (-) and underscores "
            "(_), and can not be more than 511 bytes.",
        )
    return str(value)


def _select(doc: dict[str, Any], attributes: list[str]) -> dict[str, Any]:
    if "*" in attributes:
        return copy.deepcopy(doc)
    return {k: copy.deepcopy(v) for k, v in doc.items() if k in attributes}


def _pattern_matches(pattern: str, name: str) -> bool:
    regex = "^" + ".*".join(re.escape(p) for p in pattern.split("*")) + "$"
    return re.match(regex, name) is not None


def _filter_features(index: _Index, attribute: str) -> dict[str, bool] | None:
    """Features of the first filterable rule matching `attribute`; None if not filterable."""
    for rule in index.settings["filterableAttributes"]:
        if isinstance(rule, str):
            if _pattern_matches(rule, attribute):
                return {"equality": True, "comparison": True}
        elif any(_pattern_matches(p, attribute) for p in rule["attributePatterns"]):
            features: dict[str, bool] = rule["features"]["filter"]
            return features
    return None


def _check_filterable(index: _Index, tree: Any) -> None:
    patterns = [
        r if isinstance(r, str) else ", ".join(r["attributePatterns"])
        for r in index.settings["filterableAttributes"]
    ]
    for attribute, operator in filter_attributes(tree):
        features = _filter_features(index, attribute)
        if features is None:
            available = (
                f" Available filterable attribute patterns are: `{', '.join(patterns)}`."
                if patterns
                else " This index does not have configured filterable attributes."
            )
            raise FilterError(f"Attribute `{attribute}` is not filterable.{available}")
        kind = "comparison" if operator in ("<", ">", "<=", ">=", "TO") else "equality"
        if not features.get(kind, False):
            raise FilterError(
                f"Filter operator `{operator}` is not allowed for the attribute `{attribute}`."
            )


# -- search ------------------------------------------------------------------------------


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


@dataclass(frozen=True)
class _Word:
    text: str
    cjk: bool
    prefix: bool

    def in_text(self, folded: str, words: set[str]) -> bool:
        if self.cjk:
            return self.text in folded
        if self.text in words:
            return True
        return self.prefix and any(w.startswith(self.text) for w in words)


def _query_words(q: str) -> list[_Word]:
    found = [m.group(0) for m in _QUERY_WORD_RE.finditer(_fold(q))][:QUERY_WORD_LIMIT]
    ends_open = bool(q) and not q[-1].isspace() and (q[-1].isalnum() or bool(_CJK_RE.match(q[-1])))
    return [
        _Word(w, bool(_CJK_RE.match(w)), ends_open and i == len(found) - 1)
        for i, w in enumerate(found)
    ]


def _searchable(index: _Index, body: dict[str, Any], doc: dict[str, Any]) -> list[str]:
    configured = index.settings["searchableAttributes"]
    names = list(doc) if configured == ["*"] else configured
    restrict = body.get("attributesToSearchOn")
    if restrict is not None:
        for name in restrict:
            if configured != ["*"] and name not in configured:
                raise ApiError(
                    400,
                    "invalid_search_attributes_to_search_on",
                    f"Attribute `{name}` is not searchable.",
                )
        names = [n for n in names if n in restrict]
    return names


def _run_search(index: _Index, body: dict[str, Any]) -> dict[str, Any]:
    q = body.get("q") or ""
    limit, offset = int(body.get("limit", 20)), int(body.get("offset", 0))
    for locale in body.get("locales") or []:
        if locale not in _LOCALES:
            raise ApiError(400, "invalid_search_locales", f"Unknown value `{locale}` at `.locales`")
    docs = list(index.documents.values())
    if body.get("filter") not in (None, "", []):
        try:
            tree = parse_filter(body["filter"])
            _check_filterable(index, tree)
        except FilterError as exc:
            raise ApiError(400, "invalid_search_filter", str(exc)) from exc
        docs = [d for d in docs if matches(tree, d)]
    words = _query_words(q)
    scored = _rank(index, body, docs, words) if words else [(1.0, d) for d in docs]
    distinct = body.get("distinct") or index.settings["distinctAttribute"]
    if body.get("distinct") and _filter_features(index, distinct) is None:
        raise ApiError(
            400,
            "invalid_search_distinct",
            f"Attribute `{distinct}` is not filterable and thus, cannot be used as "
            "distinct attribute.",
        )
    if distinct:
        seen: set[str] = set()
        unique = []
        for score, doc in scored:
            value = json.dumps(doc.get(distinct), sort_keys=True)
            if doc.get(distinct) is None or value not in seen:
                seen.add(value)
                unique.append((score, doc))
        scored = unique
    threshold = body.get("rankingScoreThreshold")
    if threshold is not None:
        scored = [(s, d) for s, d in scored if s >= threshold]
    hits = [_hit(index, body, doc, score, words) for score, doc in scored[offset : offset + limit]]
    return {
        "hits": hits,
        "query": q,
        "processingTimeMs": 0,
        "limit": limit,
        "offset": offset,
        "estimatedTotalHits": len(scored),
    }


def _rank(
    index: _Index, body: dict[str, Any], docs: list[dict[str, Any]], words: list[_Word]
) -> list[tuple[float, dict[str, Any]]]:
    strategy = body.get("matchingStrategy", "last")
    if strategy not in ("last", "all", "frequency"):
        raise ApiError(
            400,
            "invalid_search_matching_strategy",
            f"Unknown value `{strategy}` at `.matchingStrategy`",
        )
    # Per doc: which query words each searchable attribute holds, in attribute order.
    per_doc = []
    for doc in docs:
        attrs = []
        for name in _searchable(index, body, doc):
            value = doc.get(name)
            if isinstance(value, str):
                folded = _fold(value)
                tokens = set(_DOC_WORD_RE.findall(folded))
                attrs.append({i for i, w in enumerate(words) if w.in_text(folded, tokens)})
        per_doc.append((doc, attrs))
    n = len(words)
    if strategy == "frequency":
        freq = [sum(1 for _, a in per_doc if any(i in s for s in a)) for i in range(n)]
        order = sorted(range(n), key=lambda i: -freq[i])  # most frequent dropped first
        levels = [set(range(n)) - set(order[:k]) for k in range(n)]
    else:
        levels = [set(range(n - k)) for k in range(1 if strategy == "all" else n)]
    # Sort key: ranking rules in their default order (words, then exactness, then attribute),
    # then insertion order; the score only has to agree with that order and stay in [0, 1].
    ranked: list[tuple[tuple[int, int, int, int], float, dict[str, Any]]] = []
    for position, (doc, attrs) in enumerate(per_doc):
        present = set().union(*attrs) if attrs else set()
        for required in levels:
            if required and required <= present:
                first_attr = min(i for i, s in enumerate(attrs) if s & required)
                exact = all(not words[i].prefix for i in required)
                score = (len(required) - 0.5 + 0.3 * exact + 0.2 / (1 + first_attr)) / n
                key = (-len(required), -exact, first_attr, position)
                ranked.append((key, round(min(1.0, score), 6), doc))
                break
    ranked.sort(key=lambda r: r[0])
    return [(score, doc) for _, score, doc in ranked]


def _hit(
    index: _Index, body: dict[str, Any], doc: dict[str, Any], score: float, words: list[_Word]
) -> dict[str, Any]:
    displayed = index.settings["displayedAttributes"]
    retrieve = body.get("attributesToRetrieve") or ["*"]
    hit = {
        k: copy.deepcopy(v)
        for k, v in doc.items()
        if ("*" in displayed or k in displayed) and ("*" in retrieve or k in retrieve)
    }
    crop = {}
    for spec in body.get("attributesToCrop") or []:
        name, _, length = spec.partition(":")
        crop[name] = int(length) if length else int(body.get("cropLength", 10))
    highlight = set(body.get("attributesToHighlight") or [])
    if crop or highlight:
        pre, post = body.get("highlightPreTag", "<em>"), body.get("highlightPostTag", "</em>")
        marker = body.get("cropMarker", "…")
        formatted: dict[str, Any] = {}
        for key, value in hit.items():
            if isinstance(value, str) and ("*" in crop or key in crop):
                value = _crop(value, words, crop.get(key, crop.get("*", 10)), marker)
            if isinstance(value, str) and ("*" in highlight or key in highlight):
                value = _highlight(value, words, pre, post)
            formatted[key] = value
        hit["_formatted"] = formatted
    if body.get("showRankingScore"):
        hit["_rankingScore"] = score
    return hit


def _matches_at(text: str, words: list[_Word]) -> list[tuple[int, int]]:
    folded = _fold(text) if len(_fold(text)) == len(text) else text.lower()
    spans = []
    for m in _DOC_WORD_RE.finditer(folded):
        if any(
            not w.cjk and (m.group(0) == w.text or (w.prefix and m.group(0).startswith(w.text)))
            for w in words
        ):
            spans.append(m.span())
    for w in words:
        if w.cjk:
            spans.extend((m.start(), m.end()) for m in re.finditer(re.escape(w.text), folded))
    return sorted(spans)


def _crop(text: str, words: list[_Word], length: int, marker: str) -> str:
    tokens = list(_DOC_WORD_RE.finditer(text))
    if len(tokens) <= length:
        return text
    spans = _matches_at(text, words)
    center = 0
    if spans:
        center = next((i for i, t in enumerate(tokens) if t.end() > spans[0][0]), 0)
    first = max(0, min(center - length // 2, len(tokens) - length))
    last = first + length - 1
    start = 0 if first == 0 else tokens[first].start()
    end = len(text) if last == len(tokens) - 1 else tokens[last].end()
    return f"{marker if start else ''}{text[start:end]}{marker if end < len(text) else ''}"


def _highlight(text: str, words: list[_Word], pre: str, post: str) -> str:
    out, cursor = [], 0
    for start, end in _matches_at(text, words):
        if start < cursor:
            continue
        out += [text[cursor:start], pre, text[start:end], post]
        cursor = end
    out.append(text[cursor:])
    return "".join(out)

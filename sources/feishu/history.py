"""Feishu chat history: the chats the bot is in and the known direct messages, one record per
Feishu `message_id`, shared with webhook ingest (whichever writes first wins).

Units are chats (`feishu:<chat_id>`): groups from `im.v1.chat.list`, direct messages from the
conversations ingest has seen (Feishu lists no p2p chats). A chat's history is read with
`im.v1.message.list` (`container_id_type=chat`, times in seconds, oldest first, 50 a page)
over a bounded range that ends where the sync began; in normal groups the replies inside a
thread are not in the chat's list, so each thread root's replies are read with
`container_id_type=thread`, and threads active in the last days are looked at again for new
replies. Every page is committed with the cursor after it:

    {"covered": [from_s, until_s],                 # what is stored, in seconds, inclusive
     "pending": {"range": [s, e], "page_token": t, "last_ms": m} | absent,  # a range under way
     "threads": {thread_id: last_reply_ms}}         # threads to look at again

so a sync killed mid-way resumes at the page after the last committed one (or, if Feishu no
longer accepts the page token, from the last stored message's second), and the unique
(source, message_id) makes the overlap harmless.

Calls go through the channel's `FeishuApi.call` (our token cache, usage counting, the retry
policy for rate limits) with at most 4 at once and 250 ms between starts (`Pacer`). The SDK's
`a*` methods open a new HTTP client for every call, about 23 ms of CPU each for its TLS
context, which would cap a history sync at some 2,000 messages a second; the typed
`ListChatRequest`/`ListMessageRequest` are therefore executed on one kept-alive client
(`KeptAliveTransport`), and their answers read as plain JSON (`JsonResponse`).

This module imports nothing from `bot` (dependencies flow from `bot` to `sources`): the API
object and the content renderer are handed in.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from sqlalchemy import select

from sources.base import Cursor, FileOf, Observation, Page, SyncRequest, Unit, UnitState
from sources.feishu.records import (
    KIND,
    PLATFORM,
    MentionRef,
    chat_scope,
    message_record,
    source_name,
)
from sources.feishu.sdk import BaseResponse, ListChatRequest, ListMessageRequest, RequestOption
from sources.feishu.transport import (
    JsonResponse,
    KeptAliveTransport,
    Pacer,
)
from storage.db import Database
from storage.models import Conversation
from storage.repos.attachments import NewAttachment
from storage.repos.source_records import NewRecord

log = logging.getLogger(__name__)

PAGE_SIZE = 50  # the most message.list gives
CHAT_PAGE_SIZE = 100
OVERLAP_SECONDS = 60  # read again before the covered end: late writes in the last second(s)
THREAD_RECENT_SECONDS = 7 * 24 * 3600  # threads looked at again for new replies
MAX_TRACKED_THREADS = 200
RECALLED = "[recalled]"

R = TypeVar("R", bound=BaseResponse)


class FeishuCaller(Protocol):
    """What `bot.channels.feishu.api.FeishuApi` offers: its domain and `call`, which runs a
    send with our token, counts it, and retries rate limits and server errors."""

    domain: str

    async def call(self, api: str, send: Callable[[RequestOption], Awaitable[R]]) -> R: ...


# (message type, raw content JSON string, mentions) -> the text people read
Renderer = Callable[[str, Any, Sequence[MentionRef]], str]


class ResourceRef(Protocol):
    """A resource a message carries (the channel's reader gives these: key, kind, name)."""

    @property
    def key(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def duration_ms(self) -> int | None: ...


# (message_type, content) -> the message's resources; handed in by the bot (the channel's
# own reader), like the renderer, so history and ingest see the same files.
Resources = Callable[[str, Any], Sequence[ResourceRef]]


def plain_renderer(message_type: str, content: Any, mentions: Sequence[MentionRef]) -> str:
    """A minimal renderer (the bot hands in the channel's own, which also reads rich text)."""
    try:
        data = json.loads(content) if isinstance(content, str) and content else {}
    except ValueError:
        data = {}
    text = str(data.get("text", "")) if message_type == "text" and isinstance(data, dict) else ""
    text = text or f"[{message_type}]"
    for m in sorted(mentions, key=lambda m: len(m.key), reverse=True):
        if m.key:
            text = text.replace(m.key, f"@{m.name}")
    return text


# ---- cursor -------------------------------------------------------------------------------


@dataclass
class _Pending:
    start: int
    end: int
    page_token: str | None
    last_ms: int


@dataclass
class ChatCursor:
    covered: tuple[int, int] | None
    pending: _Pending | None
    threads: dict[str, int]

    @classmethod
    def load(cls, data: Cursor | None) -> ChatCursor:
        data = data or {}
        covered = data.get("covered")
        pending = data.get("pending")
        return cls(
            (int(covered[0]), int(covered[1])) if covered else None,
            _Pending(
                int(pending["range"][0]),
                int(pending["range"][1]),
                pending.get("page_token") or None,
                int(pending.get("last_ms") or 0),
            )
            if pending
            else None,
            {str(k): int(v) for k, v in (data.get("threads") or {}).items()},
        )

    def dump(self) -> Cursor:
        out: Cursor = {}
        if self.covered is not None:
            out["covered"] = list(self.covered)
        if self.pending is not None:
            out["pending"] = {
                "range": [self.pending.start, self.pending.end],
                "page_token": self.pending.page_token,
                "last_ms": self.pending.last_ms,
            }
        if self.threads:
            out["threads"] = dict(self.threads)
        return out

    def cover(self, start: int, end: int) -> None:
        if self.covered is None:
            self.covered = (start, end)
        else:
            self.covered = (min(self.covered[0], start), max(self.covered[1], end))

    def next_range(
        self, since_s: int | None, now_s: int, *, forward_done: bool
    ) -> tuple[int, int] | None:
        """The next range to read: everything since `since_s` (all history when None) the
        first time; later a backfill before what is covered when asked to go back further,
        then, once per run, from the covered end (less an overlap: a message can land in the
        second a range ended) to when this run began."""
        if self.covered is None:
            return (since_s or 0, now_s)
        start, end = self.covered
        if since_s is not None and since_s < start:
            return (since_s, start)
        if not forward_done:
            return (max(start, end - OVERLAP_SECONDS), now_s)
        return None

    def note_thread(self, thread_id: str, last_ms: int, now_s: int) -> None:
        self.threads[thread_id] = max(last_ms, self.threads.get(thread_id, 0))
        horizon = (now_s - THREAD_RECENT_SECONDS) * 1000
        recent = sorted(
            ((t, ms) for t, ms in self.threads.items() if ms >= horizon),
            key=lambda item: item[1],
            reverse=True,
        )
        self.threads = dict(recent[:MAX_TRACKED_THREADS])


# ---- the adapter --------------------------------------------------------------------------


class FeishuHistory:
    kind = KIND

    def __init__(
        self,
        api: FeishuCaller,
        db: Database,
        *,
        render: Renderer = plain_renderer,
        resources: Resources | None = None,
        pacer: Pacer | None = None,
        transport: KeptAliveTransport | None = None,
        clock: Callable[[], float] = time.time,
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.api = api
        self.db = db
        self.render = render
        self.resources = resources
        self.pacer = pacer or Pacer()
        self.transport = transport or KeptAliveTransport(api.domain)
        self.clock = clock
        self.on_close = on_close

    async def aclose(self) -> None:
        await self.transport.aclose()
        if self.on_close is not None:
            await self.on_close()

    # ---- observe -----------------------------------------------------------------------

    async def observe(self) -> Observation:
        now = datetime.fromtimestamp(self.clock(), UTC).isoformat()
        units: dict[str, Unit] = {}
        token: str | None = None
        while True:
            data = (await self._list_chats(token)).data
            for chat in data.get("items") or []:
                chat_id = chat.get("chat_id") if isinstance(chat, dict) else None
                if not chat_id:
                    continue
                units[chat_id] = Unit(
                    name=source_name(chat_id),
                    scope=chat_scope("group", chat_id, None),
                    title=chat.get("name") or None,
                    observed_cursor={"present": True, "observed_at": now, "chat_type": "group"},
                )
            token = data.get("page_token") if data.get("has_more") else None
            if not token:
                break
        groups = len(units)
        for chat_id, peer, name in await self._known_dms():
            units.setdefault(
                chat_id,
                Unit(
                    name=source_name(chat_id),
                    scope=chat_scope("p2p", chat_id, peer),
                    title=name or (f"DM {peer}" if peer else None),
                    observed_cursor={"present": True, "observed_at": now, "chat_type": "p2p"},
                ),
            )
        return Observation(
            list(units.values()),
            {"groups": groups, "direct": len(units) - groups, "observed_at": now},
        )

    async def _known_dms(self) -> list[tuple[str, str | None, str | None]]:
        async with self.db.read() as tx:
            rows = await tx.execute(
                select(Conversation.chat_id, Conversation.peer_open_id, Conversation.name).where(
                    Conversation.platform == PLATFORM, Conversation.chat_type == "p2p"
                )
            )
            return [(str(c), p, n) for c, p, n in rows.all()]

    async def _list_chats(self, page_token: str | None) -> JsonResponse:
        builder = ListChatRequest.builder().page_size(CHAT_PAGE_SIZE)
        if page_token:
            builder = builder.page_token(page_token)
        request = builder.build()
        async with self.pacer.slot():
            return await self.api.call(
                "im.chat.list",
                lambda opt: self.transport.send(request, opt),
            )

    # ---- sync ----------------------------------------------------------------------------

    async def sync(self, unit: UnitState, request: SyncRequest) -> AsyncGenerator[Page, None]:
        cursor = ChatCursor.load(unit.synced_cursor)
        now_s = int(self.clock())
        since_s = int(request.since.timestamp()) if request.since else None
        fetched_threads: set[str] = set()
        if cursor.pending is not None:
            p = cursor.pending
            async for page in self._range(unit, cursor, p.start, p.end, fetched_threads, p):
                yield page
        forward_done = False
        while (planned := cursor.next_range(since_s, now_s, forward_done=forward_done)) is not None:
            start, end = planned
            forward_done = forward_done or end == now_s
            async for page in self._range(unit, cursor, start, end, fetched_threads, None):
                yield page
        for thread_id, last_ms in list(cursor.threads.items()):
            if thread_id not in fetched_threads:
                async for page in self._thread(unit, cursor, thread_id, after_ms=last_ms):
                    yield page
        yield Page([], cursor.dump())  # the run's end: threads noted, nothing pending

    async def _range(
        self,
        unit: UnitState,
        cursor: ChatCursor,
        start: int,
        end: int,
        fetched_threads: set[str],
        resume: _Pending | None,
    ) -> AsyncIterator[Page]:
        chat_id = unit.name.split(":", 1)[1]
        token = resume.page_token if resume else None
        last_ms = resume.last_ms if resume else 0
        origin = start  # what the range covers once done, even if it restarts later on
        while True:
            try:
                resp = await self._list_messages("chat", chat_id, token, start, end)
            except Exception as exc:
                if token is None or resume is None or not _refused(exc):
                    raise
                # The saved page token is no longer accepted: read on from the last second
                # stored (duplicates are ignored by the unique key).
                log.info("%s: page token refused (%s); resuming by time", unit.name, exc)
                start, token, resume = max(start, last_ms // 1000), None, None
                continue
            resume = None
            records, files = [], []
            for item in _items(resp):
                records.append(self._record(unit, item))
                files.extend(self._files(records[-1], item))
                last_ms = max(last_ms, _ms(item))
                thread_id = item.get("thread_id")
                if thread_id and thread_id not in fetched_threads:
                    fetched_threads.add(thread_id)
                    async for page in self._thread(unit, cursor, thread_id, after_ms=None):
                        yield page
            token = _next_token(resp)
            if token:
                cursor.pending = _Pending(origin, end, token, last_ms)
            else:
                cursor.pending = None
                cursor.cover(origin, end)
            yield Page(records, cursor.dump(), attachments=files)
            if not token:
                return

    async def _thread(
        self, unit: UnitState, cursor: ChatCursor, thread_id: str, *, after_ms: int | None
    ) -> AsyncIterator[Page]:
        """A thread's messages: all of them (`after_ms` None), or, newest first, those after
        `after_ms` (a thread looked at again). Pages leave the chat cursor as it is."""
        token: str | None = None
        newest = after_ms or 0
        while True:
            resp = await self._list_messages(
                "thread",
                thread_id,
                token,
                sort="ByCreateTimeAsc" if after_ms is None else "ByCreateTimeDesc",
            )
            items = _items(resp)
            fresh = [i for i in items if after_ms is None or _ms(i) > after_ms]
            for item in fresh:
                newest = max(newest, _ms(item))
            if fresh:
                records = [self._record(unit, i) for i in fresh]
                files = [f for r, i in zip(records, fresh, strict=True) for f in self._files(r, i)]
                yield Page(records, attachments=files)
            token = _next_token(resp)
            if token is None or (after_ms is not None and len(fresh) < len(items)):
                break
        if newest:
            cursor.note_thread(thread_id, newest, int(self.clock()))

    async def _list_messages(
        self,
        container_type: str,
        container_id: str,
        page_token: str | None,
        start: int | None = None,
        end: int | None = None,
        sort: str = "ByCreateTimeAsc",
    ) -> JsonResponse:
        builder = (
            ListMessageRequest.builder()
            .container_id_type(container_type)
            .container_id(container_id)
            .sort_type(sort)
            .page_size(PAGE_SIZE)
        )
        if start is not None:
            builder = builder.start_time(str(start))
        if end is not None:
            builder = builder.end_time(str(end))
        if page_token:
            builder = builder.page_token(page_token)
        request = builder.build()
        async with self.pacer.slot():
            return await self.api.call(
                "im.message.list",
                lambda opt: self.transport.send(request, opt),
            )

    def _record(self, unit: UnitState, item: dict[str, Any]) -> NewRecord:
        return item_record(
            item, chat_id=unit.name.split(":", 1)[1], scope=unit.scope, render=self.render
        )

    def _files(self, record: NewRecord, item: dict[str, Any]) -> list[FileOf]:
        """The message's resources, to be fetched as ingest's are (a recalled one's are gone)."""
        if self.resources is None or item.get("deleted"):
            return []
        message_type = str(item.get("msg_type") or "unknown")
        content = (item.get("body") or {}).get("content")
        return [
            FileOf(
                NewAttachment(
                    platform=KIND,
                    message_id=record.external_id,
                    resource_key=ref.key,
                    source=record.source,
                    scope=record.scope,
                    kind=ref.kind,
                    name=ref.name,
                    chat_id=record.source.split(":", 1)[1],
                    duration_ms=ref.duration_ms,
                    author=record.author,
                    sent_at=record.sent_at,
                )
            )
            for ref in self.resources(message_type, content)
        ]


def item_record(
    item: dict[str, Any],
    *,
    chat_id: str,
    scope: str,
    render: Renderer,
    source: str | None = None,
) -> NewRecord:
    """A listed message (`im/v1/messages` item) as its record: the one conversion, for the
    history sync and for the owner's chats read as the owner (`source` names their unit)."""
    sender = item.get("sender") or {}
    mentions = [
        MentionRef(str(m.get("key") or ""), str(m.get("name") or ""), _open_id(m.get("id")))
        for m in item.get("mentions") or []
        if isinstance(m, dict)
    ]
    message_type = str(item.get("msg_type") or "unknown")
    deleted = bool(item.get("deleted"))
    content = (item.get("body") or {}).get("content")
    text = RECALLED if deleted else render(message_type, content, mentions)
    created_ms = _ms(item)
    return message_record(
        chat_id=chat_id,
        scope=scope,
        message_id=str(item["message_id"]),
        text=text,
        sender_id=sender.get("id"),
        sender_type=sender.get("sender_type"),
        message_type=message_type,
        created_at=datetime.fromtimestamp(created_ms / 1000, UTC) if created_ms else None,
        root_id=item.get("root_id"),
        parent_id=item.get("parent_id"),
        thread_id=item.get("thread_id"),
        mentions=mentions,
        origin="history",
        deleted=deleted,
        source=source,
    )


def _items(resp: JsonResponse) -> list[dict[str, Any]]:
    return [i for i in resp.data.get("items") or [] if isinstance(i, dict) and i.get("message_id")]


def _next_token(resp: JsonResponse) -> str | None:
    token = resp.data.get("page_token")
    return str(token) if resp.data.get("has_more") and token else None


def _ms(item: dict[str, Any]) -> int:
    try:
        return int(item.get("create_time") or 0)
    except (TypeError, ValueError):
        return 0


def _open_id(value: Any) -> str | None:
    """Mentions in the REST answer carry the open_id as a string (`id_type` open_id)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return value.get("open_id")
    return None


def _refused(exc: BaseException) -> bool:
    """Feishu answered with a definite, non-retryable error code (FeishuApiError)."""
    return isinstance(getattr(exc, "code", None), int) and not getattr(exc, "retryable", True)

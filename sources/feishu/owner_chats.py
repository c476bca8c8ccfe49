"""The owner's own chats, read as the owner: the groups the bot is not in and direct messages
that the owner chose (`/sync chats add`), one unit `chats:<chat_id>` each, scope
`owner:chat:<chat_id>` (the owner's DM sees it; another chat only once the owner shares that
unit, as for the documents).

What Feishu offers a user token (researched 2026-12; see also tests/fakes/feishu_im.py):
- `GET im/v1/chats` lists the groups of the user the token represents, never p2p chats;
  Authorization `tenant_access_token` or `user_access_token`; scopes im:chat,
  im:chat:readonly or im:chat:read (one of them):
  https://open.feishu.cn/document/server-docs/group/chat/list
  (open.larkoffice.com/document/uAjLw4CM/ukTMukTMukTM/reference/im-v1/chat/list).
- `GET im/v1/messages?container_id_type=chat&container_id&start_time&end_time` (seconds),
  `sort_type`, `page_size` <= 50, `page_token`/`has_more`; scopes im:message,
  im:message:readonly or im:message.history:readonly:
  https://open.feishu.cn/document/server-docs/im-v1/message/list. The page we could read
  names only `tenant_access_token`; reading it as the user is what Lark's own OpenClaw
  plugin does (feishu_im_user_get_messages, larksuite/openclaw-lark), so a tenant that does
  not allow it answers an error, shown on that chat.
No documented endpoint lists a user's p2p chats, so a direct message is added by its chat id.

A chat the bot is in is the history sync's (`feishu:<chat_id>`, sources/feishu/history.py):
it is refused when chosen and, if the bot joins later, shown as that unit's error instead of
being stored twice with two visibilities.

Incremental by create time: the cursor keeps the newest message's time (`last_ms`); a sync
reads from that second to when it began, oldest first, a page committed at a time (the
overlap's one second is harmless: a record is unique by message id). Only a thread's root is
in a chat's list, so a root's thread is read (`container_id_type=thread`), and threads active
in the last days are looked at again for new replies, as the history sync does. Messages are
converted by the history sync's own `item_record`; the files they carry are not fetched (the
resource download needs the bot in the chat).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any

from sqlalchemy import select

from sources.base import Observation, Page, SyncRequest, Unit, UnitState
from sources.feishu.history import (
    MAX_TRACKED_THREADS,
    PAGE_SIZE,
    THREAD_RECENT_SECONDS,
    Renderer,
    item_record,
    plain_renderer,
)
from sources.feishu.owner_api import OwnerApi
from sources.feishu.owner_units import CHATS_KIND, chat_unit, owner_chat_scope
from sources.feishu.records import PLATFORM, source_name
from storage.db import Database
from storage.models import Conversation, Source
from storage.repos import owner_chats
from storage.repos.source_records import NewRecord

CHAT_PAGE_SIZE = 100  # im/v1/chats' maximum
BOT_IS_IN = "the bot is in this chat: the Feishu history sync reads it (feishu:{chat_id})"


async def list_groups(api: OwnerApi) -> list[dict[str, Any]]:
    """The owner's groups as Feishu lists them (`chat_id`, `name`), every page."""
    groups: list[dict[str, Any]] = []
    page_token = ""
    while True:
        params: dict[str, Any] = {"page_size": CHAT_PAGE_SIZE}
        if page_token:
            params["page_token"] = page_token
        data = await api.call("GET", "im/v1/chats", params=params, api="im.chat.list")
        groups += [g for g in data.get("items") or [] if isinstance(g, dict) and g.get("chat_id")]
        page_token = str(data.get("page_token") or "")
        if not data.get("has_more") or not page_token:
            return groups


async def bot_chats(db: Database, chat_ids: list[str]) -> set[str]:
    """Which of these chats the bot is in: the history sync lists it, or ingest saw it."""
    if not chat_ids:
        return set()
    async with db.read() as tx:
        synced = await tx.scalars(
            select(Source.name).where(Source.name.in_([source_name(c) for c in chat_ids]))
        )
        names = {n.split(":", 1)[1] for n in synced.all()}
        seen = await tx.scalars(
            select(Conversation.chat_id).where(
                Conversation.platform == PLATFORM, Conversation.chat_id.in_(chat_ids)
            )
        )
        return names | {str(c) for c in seen.all()}


class OwnerChats:
    kind = CHATS_KIND

    def __init__(
        self,
        api: OwnerApi,
        db: Database,
        *,
        render: Renderer = plain_renderer,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.api = api
        self.db = db
        self.render = render
        self.clock = clock

    async def observe(self) -> Observation:
        async with self.db.read() as tx:
            chosen = await owner_chats.chosen(tx)
        taken = await bot_chats(self.db, [c.chat_id for c in chosen])
        units = [
            Unit(
                name=chat_unit(c.chat_id),
                scope=owner_chat_scope(c.chat_id),
                title=c.title,
                observed_cursor={"present": True, "chat_type": c.chat_type},
                error=BOT_IS_IN.format(chat_id=c.chat_id) if c.chat_id in taken else None,
            )
            for c in chosen
        ]
        return Observation(units, {"chosen": len(chosen), "bot_is_in": len(taken)})

    async def sync(self, unit: UnitState, request: SyncRequest) -> AsyncGenerator[Page, None]:
        chat_id = unit.name.split(":", 1)[1]
        cursor = unit.synced_cursor or {}
        last_ms = int(cursor.get("last_ms") or 0)
        threads = {str(k): int(v) for k, v in (cursor.get("threads") or {}).items()}
        if last_ms:
            start = last_ms // 1000
        else:
            start = int(request.since.timestamp()) if request.since else 0
        chat = {
            "container_id_type": "chat",
            "container_id": chat_id,
            "start_time": start,
            "end_time": int(self.clock()),
            "sort_type": "ByCreateTimeAsc",
        }
        fetched: set[str] = set()
        async for items in self._pages(chat):
            # A thread's replies are stored before the page that moves the cursor past its
            # root, so a sync killed in between reads the root, and the thread, again.
            for item in items:
                thread_id = str(item.get("thread_id") or "")
                if thread_id and thread_id not in fetched:
                    fetched.add(thread_id)
                    async for page in self._thread(unit, chat_id, thread_id, None, threads):
                        yield page
                last_ms = max(last_ms, _ms(item))
            records = [self._record(unit, chat_id, i) for i in items]
            yield Page(records, {"last_ms": last_ms, "threads": dict(threads)})
        for thread_id, after_ms in list(threads.items()):  # new replies in recent threads
            if thread_id not in fetched:
                async for page in self._thread(unit, chat_id, thread_id, after_ms, threads):
                    yield page
        yield Page([], {"last_ms": last_ms, "threads": dict(threads)})

    async def _pages(self, params: dict[str, Any]) -> AsyncGenerator[list[dict[str, Any]], None]:
        page_token = ""
        while True:
            query = {**params, "page_size": PAGE_SIZE}
            if page_token:
                query["page_token"] = page_token
            data = await self.api.call("GET", "im/v1/messages", params=query, api="im.message.list")
            yield [
                i for i in data.get("items") or [] if isinstance(i, dict) and i.get("message_id")
            ]
            page_token = str(data.get("page_token") or "")
            if not data.get("has_more") or not page_token:
                return

    async def _thread(
        self,
        unit: UnitState,
        chat_id: str,
        thread_id: str,
        after_ms: int | None,
        threads: dict[str, int],
    ) -> AsyncGenerator[Page, None]:
        """A thread's messages: all (`after_ms` None), or, newest first, those after
        `after_ms` (a thread looked at again). Pages leave the cursor as it is; the thread is
        noted in `threads` (the recent ones are looked at again on later syncs)."""
        order = "ByCreateTimeAsc" if after_ms is None else "ByCreateTimeDesc"
        params = {"container_id_type": "thread", "container_id": thread_id, "sort_type": order}
        newest = after_ms or 0
        async with contextlib.aclosing(self._pages(params)) as pages:
            async for items in pages:
                fresh = [i for i in items if after_ms is None or _ms(i) > after_ms]
                newest = max([newest, *(_ms(i) for i in fresh)])
                if fresh:
                    yield Page([self._record(unit, chat_id, i) for i in fresh])
                if len(fresh) < len(items):  # newest first: the rest were read before
                    break
        if newest:
            threads[thread_id] = newest
        horizon = (int(self.clock()) - THREAD_RECENT_SECONDS) * 1000
        recent = sorted(
            ((t, ms) for t, ms in threads.items() if ms >= horizon), key=lambda x: -x[1]
        )
        threads.clear()
        threads.update(recent[:MAX_TRACKED_THREADS])

    def _record(self, unit: UnitState, chat_id: str, item: dict[str, Any]) -> NewRecord:
        return item_record(
            item, chat_id=chat_id, scope=unit.scope, render=self.render, source=unit.name
        )

    async def aclose(self) -> None:
        await self.api.aclose()


def _ms(item: dict[str, Any]) -> int:
    text = str(item.get("create_time") or "")
    return int(text) if text.isdigit() else 0

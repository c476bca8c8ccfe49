"""Creating, finding and steering memory indexes, under the visibility rule.

An index covers the scopes its conversation could see when it was made: made in the owner's
DM it covers everything (`scopes` None); made in a group, that group and the sources shared
with it. It can be read wherever all of its scopes are visible, so a group never reads an
index built over the owner's mail or DMs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.assistant.visibility import Visibility
from bot.channels.ingest import INBOX_TOPIC
from bot.host.notify import Notifier
from storage.db import Database
from storage.models import MemoryIndex
from storage.repos import conversations, inbox
from storage.repos import memory_indexes as repo
from storage.types import utcnow

TOPIC = "memory_indexes"
NOTICE_KIND = "index_notice"
NAME = re.compile(r"^[\w\u3400-\u9fff][\w\u3400-\u9fff.-]{0,63}$")
# Offered, not forced: `/index list` shows these when there is no index yet.
SUGGESTED = (
    ("people", "people I deal with: who they are, what they work on, how to reach them"),
    ("decisions", "decisions made: what was decided, by whom, when, and why"),
    ("promises", "open promises and deadlines: who owes what to whom, and by when"),
)


class IndexRequestError(ValueError):
    """A request about an index that cannot be done; the message says why."""


def scopes_for(visibility: Visibility) -> list[str] | None:
    return None if visibility.everything else sorted(visibility.scopes)


def sees_index(visibility: Visibility, index: MemoryIndex) -> bool:
    if visibility.everything:
        return True
    return index.scopes is not None and set(index.scopes) <= visibility.scopes


@dataclass
class IndexService:
    db: Database
    notifier: Notifier
    owner: str | None
    platform: str = "feishu"

    async def create(
        self,
        name: str,
        criteria: str,
        visibility: Visibility,
        *,
        created_by: str | None,
        interval: float,
    ) -> MemoryIndex:
        if not NAME.match(name):
            raise IndexRequestError(
                f"{name!r} is not a usable name: letters, digits, '-', '_' or '.', at most 64"
            )
        if not criteria.strip():
            raise IndexRequestError("say what the index should organize, in your words")
        if visibility.sees_nothing:
            raise IndexRequestError("this conversation cannot have indexes")
        async with self.db.write() as tx:
            index = await repo.create(
                tx,
                name=name,
                criteria=criteria.strip(),
                scopes=scopes_for(visibility),
                conversation_id=visibility.conversation_id,
                created_by=created_by,
                interval_seconds=int(interval),
                now=utcnow(),
            )
        if index is None:
            raise IndexRequestError(f"an index named {name!r} exists already")
        await self.notifier.notify(TOPIC)
        return index

    async def visible(self, visibility: Visibility) -> list[MemoryIndex]:
        async with self.db.read() as tx:
            return [i for i in await repo.all_indexes(tx) if sees_index(visibility, i)]

    async def find(self, name: str, visibility: Visibility) -> MemoryIndex:
        """The index of that name if this conversation may see it; the same error whether it
        does not exist or is not visible."""
        async with self.db.read() as tx:
            index = await repo.by_name(tx, name)
        if index is None or not sees_index(visibility, index):
            raise IndexRequestError(f"No index named {name!r}.")
        return index

    async def set_paused(self, name: str, visibility: Visibility, paused: bool) -> MemoryIndex:
        index = await self.find(name, visibility)
        async with self.db.write() as tx:
            row = await tx.get(MemoryIndex, index.id)
            assert row is not None
            row.paused, row.updated_at = paused, utcnow()
            if not paused:
                row.next_check_at = None  # due now
        await self.notifier.notify(TOPIC)
        return row

    async def run_now(self, name: str, visibility: Visibility) -> MemoryIndex:
        index = await self.find(name, visibility)
        if index.paused:
            raise IndexRequestError(f"{name!r} is paused: /index resume {name} first")
        async with self.db.write() as tx:
            row = await tx.get(MemoryIndex, index.id)
            assert row is not None
            row.next_check_at = None
        await self.notifier.notify(TOPIC)
        return row

    async def drop(self, name: str, visibility: Visibility) -> None:
        index = await self.find(name, visibility)
        async with self.db.write() as tx:
            await repo.drop(tx, index.id)

    async def notify_owner(self, index: MemoryIndex, text: str, key: str) -> bool:
        """A notice in the owner's Bot inbox (once per `key`); False when the owner has no
        DM with the assistant yet (the status stays visible in /index show)."""
        if not self.owner:
            return False
        async with self.db.write() as tx:
            dm = await conversations.find_dm(tx, self.platform, self.owner)
            if dm is None:
                return False
            await inbox.append(
                tx,
                kind=NOTICE_KIND,
                payload={"text": text, "index": index.name},
                conversation_id=dm.id,
                dedupe_key=f"index:{index.id}:{key}",
                created_at=utcnow(),
            )
        await self.notifier.notify(INBOX_TOPIC)
        return True

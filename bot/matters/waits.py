"""A Matter waiting for the owner's calendar event to start or end, or a Feishu task to be
completed (issue #41): the target, checked against the synced records
(sources/feishu/owner_items.py) and never against Feishu itself.

What wakes it is data arriving: the sync publishes TOPIC when a page of the calendar or the
tasks source commits, and `MatterWaitsWorker` then looks at the waiting Matters' targets: a
task completed, an event started or ended, an event cancelled or a task deleted makes the
Matter active with the outcome in its target (`matter_read` shows it). An event's time is
also a wake (the Host's timer), since time passing writes no record; a moved event moves it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.assistant.visibility import Visibility
from bot.host.notify import Notifier
from bot.host.workers import Worker
from sources.feishu import owner_items
from sources.feishu.owner_items import OwnerItem
from sources.feishu.owner_units import CHANGED_TOPIC
from storage.db import Database
from storage.models import Matter
from storage.repos import matters, timers
from storage.repos.matters import ACTIVE, WAITING
from storage.types import utcnow

log = logging.getLogger(__name__)

TOPIC = CHANGED_TOPIC
TargetKind = Literal["event_start", "event_end", "task_completed"]
KINDS: tuple[str, ...] = ("event_start", "event_end", "task_completed")
WHAT = {
    "event_start": "event {title!r} to start",
    "event_end": "event {title!r} to end",
    "task_completed": "task {title!r} to be completed",
}


class WaitRefused(Exception):
    """The target cannot be waited for; the one-line message says why."""


def describe(target: dict[str, Any]) -> str:
    """`task 'Send budget' to be completed`, for /matters and the reviewer."""
    return WHAT.get(str(target.get("kind")), "{title!r}").format(title=target.get("title", "?"))


def wake_at(target: dict[str, Any] | None) -> datetime | None:
    """The moment an event target is met by time alone (none for a task)."""
    at = (target or {}).get("at")
    return datetime.fromisoformat(at) if at else None


def _item_kind(kind: str) -> str:
    return "task" if kind == "task_completed" else "event"


def _moment(kind: str, item: OwnerItem) -> datetime | None:
    return item.end if kind == "event_end" else item.start if kind == "event_start" else None


async def resolve(
    tx: AsyncSession, kind: str, ref: str, visibility: Visibility, now: datetime
) -> dict[str, Any]:
    """The target for `ref` (an event id, a task guid, or a `rec-N` of either) that the
    asking conversation may see; WaitRefused in one line otherwise."""
    if kind not in KINDS:
        raise WaitRefused(f"target kind {kind!r}: use one of {', '.join(KINDS)}")
    want = _item_kind(kind)
    ref = ref.strip()
    item: OwnerItem | None
    if ref.startswith("rec-") and ref[4:].isdigit():
        item = await owner_items.by_record(tx, int(ref[4:]))
    else:  # a version's id (`<event_id>#v…`, `<guid>#u…`) names its item
        item = await owner_items.current(tx, want, ref.partition("#")[0])
    if item is None or item.kind != want or not visibility.sees_scope(item.scope):
        raise WaitRefused(
            f"no {want} {ref!r} here: use an event id, a task guid or a rec-N ref of one "
            "from memory_search"
        )
    if item.kind == "task" and item.completed_at is not None:
        raise WaitRefused(f"the task {item.title!r} is already completed")
    moment = _moment(kind, item)
    if item.kind == "event" and (moment is None or moment <= now):
        raise WaitRefused(f"the event {item.title!r} has already {_past(kind)}")
    return {
        "kind": kind,
        "item": item.item_id,
        "title": item.title,
        "at": moment.isoformat() if moment else None,
    }


def _past(kind: str) -> str:
    return "ended" if kind == "event_end" else "started"


@dataclass(frozen=True)
class Check:
    outcome: str | None  # the target met or gone, in words; None while still waited for
    at: datetime | None = None  # an event's time now (it may have moved)


async def check(tx: AsyncSession, target: dict[str, Any], now: datetime) -> Check:
    kind, title = str(target["kind"]), target.get("title", "?")
    item = await owner_items.current(tx, _item_kind(kind), str(target["item"]))
    if item is None:
        gone = "cancelled" if _item_kind(kind) == "event" else "deleted"
        return Check(f"the {_item_kind(kind)} {title!r} was {gone}")
    if item.kind == "task":
        if item.completed_at is not None:
            return Check(
                f"the task {item.title!r} was completed at {item.completed_at:%Y-%m-%d %H:%M} UTC"
            )
        return Check(None)
    moment = _moment(kind, item)
    if moment is not None and moment <= now:
        return Check(
            f"the event {item.title!r} {_past(kind)} at {moment:%Y-%m-%d %H:%M} UTC", moment
        )
    return Check(None, moment)


def next_wake(wakes: list[str], target: dict[str, Any] | None) -> datetime | None:
    """The earliest of the agent's own wakes and the event's time."""
    times = [datetime.fromisoformat(w) for w in wakes]
    if (at := wake_at(target)) is not None:
        times.append(at)
    return min(times) if times else None


async def apply_check(tx: AsyncSession, matter: Matter, now: datetime) -> bool:
    """In the caller's transaction (the matter locked): a met or gone target wakes the Matter
    with its outcome; a moved event moves its wake. Whether it woke."""
    target = matter.waits_on
    if matter.status != WAITING or not target or target.get("outcome"):
        return False
    found = await check(tx, target, now)
    if found.outcome is not None:
        matter.waits_on = {**target, "outcome": found.outcome}
        await matters.set_status(tx, matter, ACTIVE, now)
        await timers.cancel(tx, wake_key(matter.id))
        return True
    moved = found.at.isoformat() if found.at else None
    if moved and moved != target.get("at"):
        matter.waits_on = {**target, "at": moved}
        matter.next_wake_at = next_wake(matter.wakes, matter.waits_on)
        await schedule_wake(tx, matter)
    return False


def wake_key(matter_id: int) -> str:
    return f"matter:{matter_id}"


WAKE_KIND = "matter_wake"


async def schedule_wake(tx: AsyncSession, matter: Matter) -> None:
    if matter.status == WAITING and matter.next_wake_at is not None:
        await timers.schedule(
            tx,
            kind=WAKE_KIND,
            key=wake_key(matter.id),
            due_at=matter.next_wake_at,
            payload={"matter_id": matter.id},
        )
    else:
        await timers.cancel(tx, wake_key(matter.id))


async def check_waiting(db: Database, now: datetime) -> int:
    """Every waiting Matter with a target, checked; how many woke."""
    async with db.read() as tx:
        rows = await tx.execute(select(Matter.id, Matter.waits_on).where(Matter.status == WAITING))
        ids = [int(i) for i, target in rows.all() if target]
    woke = 0
    for matter_id in ids:
        async with db.write() as tx:
            matter = await tx.get(Matter, matter_id, with_for_update=True)
            if matter is not None and await apply_check(tx, matter, now):
                woke += 1
                log.info("matter %s woke: %s", matter_id, matter.waits_on)
    return woke


class MatterWaitsWorker(Worker):
    """Woken by the sync (TOPIC) when the owner's events or tasks changed."""

    name = "matter-waits"
    topics = (TOPIC,)

    def __init__(self, db: Database, notifier: Notifier, matters_topic: str) -> None:
        self.db, self.notifier, self.matters_topic = db, notifier, matters_topic

    async def run_once(self) -> bool:
        if await check_waiting(self.db, utcnow()):
            await self.notifier.notify(self.matters_topic)
        return False  # nothing left: the next sync wakes it

"""Changing a Matter: settles (checked, idempotent, one transaction), pauses, resumes,
cancels, wake-ups, and reports to the Bot's inbox (the Bot decides what the user hears)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession

from bot.channels.ingest import INBOX_TOPIC
from bot.host.notify import Notifier
from bot.matters import waits
from bot.matters.card import card_step
from bot.matters.rules import Disposition, SettleRefused, SettleRequest, check, operation_id
from bot.matters.waits import WAKE_KIND, schedule_wake, wake_key
from bot.workhub.summaries import TOPIC as SUMMARY_TOPIC
from storage.db import Database
from storage.models import Matter, Session, Timer
from storage.repos import inbox, matters, operations, progress_cards, timers, workhub
from storage.repos.matters import ACTIVE, CANCELLED, COMPLETED, PAUSED, WAITING
from storage.repos.progress_cards import DONE, WORKING
from storage.types import utcnow

log = logging.getLogger(__name__)

TOPIC = "matters"
WORK_RECORD_KEEP = 50
__all__ = ["WAKE_KIND", "MatterService", "wake_key", "wake_matter"]


def _settle_step(request: SettleRequest) -> tuple[str, str]:
    """A settle as a line of the Matter's card, and the card's status after it."""
    summary = " ".join(request.summary.split())[:200]
    if request.disposition is Disposition.COMPLETE:
        return f"done: {summary}", DONE
    if request.disposition is Disposition.WAIT:
        said = request.waiting_for or (waits.describe(request.target) if request.target else "")
        waiting = " ".join((said or summary).split())[:200]
        return f"waiting: {waiting}", WORKING
    return summary or "working", WORKING


@dataclass(frozen=True)
class SettleOutcome:
    status: str
    revision: int
    converged: bool = False


class MatterService:
    def __init__(self, db: Database, notifier: Notifier, *, cards: bool = True) -> None:
        self.db, self.notifier = db, notifier
        self.cards = cards  # MAKA_PROGRESS_CARDS: the Matter's progress card (matters/card.py)

    async def _card(self, tx: AsyncSession, matter: Matter, step: str, status: str) -> bool:
        return self.cards and await card_step(tx, matter, step, utcnow(), status)

    async def note_on_card(self, matter_id: int, step: str) -> None:
        """A step of the Matter's work on its card (e.g. "waiting for review")."""
        if not self.cards:
            return
        async with self.db.write() as tx:
            matter = await tx.get(Matter, matter_id)
            due = matter is not None and await card_step(tx, matter, step, utcnow())
        self._card_changed(due)

    def _card_changed(self, due: bool) -> None:
        if due:
            self.notifier.wake_local(progress_cards.PROGRESS_TOPIC)

    async def earlier(self, matter_id: int, request: SettleRequest) -> SettleOutcome | None:
        """The outcome of this settle if it was applied before; SettleRefused if a different
        settle was made at the same revision."""
        async with self.db.read() as tx:
            op = await operations.get(tx, operation_id(matter_id, request.expected_revision))
        if op is None:
            return None
        if op.fingerprint != request.fingerprint():
            raise SettleRefused("a different settle was already made at this revision")
        return SettleOutcome(op.outcome["status"], op.outcome["revision"], True)

    async def settle(
        self,
        matter_id: int,
        request: SettleRequest,
        *,
        read_item_ids: list[int],
        result_reported: bool,
    ) -> SettleOutcome:
        """Apply a reviewed settle; raises SettleRefused. A retry of the same operation
        returns the first outcome instead of applying it twice."""
        op = operation_id(matter_id, request.expected_revision)
        now = utcnow()
        notify_inbox = notify_summary = card_due = False
        async with self.db.write() as tx:
            earlier = await operations.get(tx, op)
            if earlier is not None:
                if earlier.fingerprint != request.fingerprint():
                    raise SettleRefused("a different settle was already made at this revision")
                return SettleOutcome(earlier.outcome["status"], earlier.outcome["revision"], True)
            matter = await tx.get(Matter, matter_id, with_for_update=True)
            assert matter is not None
            pending = await matters.unread_items(tx, matter.session_id)
            unread = [i for i in pending if i.id not in read_item_ids]
            check(
                request, revision=matter.revision, status=matter.status, unread=len(unread), now=now
            )
            read = [i for i in pending if i.id in read_item_ids]
            await matters.record_amendments(tx, matter, read, now)
            await inbox.mark_delivered(tx, read_item_ids, op, now)
            await self._apply(tx, matter, request, now)
            await schedule_wake(tx, matter)
            card_due = await self._card(tx, matter, *_settle_step(request))
            outcome = SettleOutcome(matter.status, matter.revision)
            await operations.claim(
                tx,
                operation_id=op,
                kind=operations.SETTLE,
                subject_id=matter.id,
                fingerprint=request.fingerprint(),
                outcome={
                    "status": outcome.status,
                    "revision": outcome.revision,
                    "disposition": request.disposition.value,
                    "summary": request.summary[:500],
                },
                now=now,
            )
            header = await tx.get(Session, matter.session_id)
            if header is not None:  # a settled turn is activity of the task Session
                header.last_message_at = now
                header.status_updated_at = now
            done = await workhub.record_completion(tx, matter.session_id, op, now)
            notify_summary = done is not None and done.refresh
            if request.disposition is Disposition.COMPLETE and not result_reported:
                notify_inbox = await self._report_in(
                    tx, matter, "result", request.summary, f"matter-result:{op}"
                )
        if notify_inbox:
            await self.notifier.notify(INBOX_TOPIC)
        if notify_summary:
            await self.notifier.notify(SUMMARY_TOPIC)
        self._card_changed(card_due)
        await self.notifier.notify(TOPIC)
        return outcome

    @staticmethod
    async def _apply(
        tx: AsyncSession, matter: Matter, request: SettleRequest, now: datetime
    ) -> None:
        matter.revision += 1
        matter.last_error = None
        record = {
            "at": now.isoformat(),
            "disposition": request.disposition.value,
            "reason": request.reason,
            "summary": request.summary,
        }
        matter.work_record = [*matter.work_record, record][-WORK_RECORD_KEEP:]
        if request.disposition is Disposition.WAIT:
            wakes = sorted(w.astimezone(UTC) for w in request.wakes)
            await matters.set_status(tx, matter, WAITING, now)
            target = dict(request.target) if request.target else None
            matter.waiting_for = request.waiting_for or (waits.describe(target) if target else None)
            matter.waits_on = target
            matter.wakes = [w.isoformat() for w in wakes]
            matter.next_wake_at = waits.next_wake(matter.wakes, target)
        elif request.disposition is Disposition.COMPLETE:
            await matters.set_status(tx, matter, COMPLETED, now)
            matter.wakes, matter.next_wake_at, matter.waiting_for = [], None, None
            matter.waits_on = None
        else:
            await matters.set_status(tx, matter, ACTIVE, now)
            matter.waiting_for = matter.waits_on = None

    async def record_rejection(self, matter_id: int) -> int:
        """The reviewer rejected a settle (the agent works on its feedback): counted, with no
        new revision, so the agent's next settle still expects the one it read. The count."""
        async with self.db.write() as tx:
            matter = await tx.get(Matter, matter_id, with_for_update=True)
            assert matter is not None
            matter.rejection_count += 1
            matter.updated_at = utcnow()
            return matter.rejection_count

    async def checkpoint(self, matter_id: int, state_text: str) -> int:
        async with self.db.write() as tx:
            matter = await tx.get(Matter, matter_id, with_for_update=True)
            assert matter is not None
            matter.state_text = state_text
            matter.revision += 1
            matter.updated_at = utcnow()
            return matter.revision

    async def pause(self, matter_id: int, error: str | None, *, report: bool) -> bool:
        notify = False
        async with self.db.write() as tx:
            matter = await tx.get(Matter, matter_id, with_for_update=True)
            if matter is None or matter.status in (COMPLETED, CANCELLED):
                return False
            await matters.set_status(tx, matter, PAUSED, utcnow())
            matter.running_since = None
            matter.lease_owner = matter.lease_expires_at = None
            matter.last_error = error
            await timers.cancel(tx, wake_key(matter.id))
            failed = (progress_cards.FAILED, f"paused: {error}") if error else (WORKING, "paused")
            card_due = await self._card(tx, matter, failed[1], failed[0])
            if report and error:
                notify = await self._report_in(
                    tx,
                    matter,
                    "blocker",
                    f"paused: {error}",
                    f"matter-paused:{matter.id}:{matter.revision}",
                )
        if notify:
            await self.notifier.notify(INBOX_TOPIC)
        self._card_changed(card_due)
        return True

    async def resume(self, matter_id: int) -> bool:
        async with self.db.write() as tx:
            matter = await tx.get(Matter, matter_id, with_for_update=True)
            if matter is None or matter.status != PAUSED:
                return False
            await matters.set_status(tx, matter, ACTIVE, utcnow())
            matter.last_error = None
            card_due = await self._card(tx, matter, "resumed", WORKING)
        self._card_changed(card_due)
        await self.notifier.notify(TOPIC)
        return True

    async def cancel(self, matter_id: int) -> bool:
        """Cancel a Matter; input handed to it that it had not read is answered with a note
        to the Bot (the Session's state changes first: a delegation in flight waits for
        this transaction, then sees the task cancelled and is refused)."""
        async with self.db.write() as tx:
            matter = await tx.get(Matter, matter_id, with_for_update=True)
            if matter is None or matter.status in (COMPLETED, CANCELLED):
                return False
            await matters.set_status(tx, matter, CANCELLED, utcnow())
            matter.wakes, matter.next_wake_at = [], None
            await timers.cancel(tx, wake_key(matter.id))
            noted = await self._answer_unread(tx, matter)
            card_due = await self._card(tx, matter, "cancelled", progress_cards.INTERRUPTED)
        if noted:
            await self.notifier.notify(INBOX_TOPIC)
        self._card_changed(card_due)
        return True

    async def answer_cancelled_input(self) -> int:
        """Input waiting in cancelled Matters (an earlier version left it there) is answered
        as a cancel answers it, so none waits unseen; how many Matters had some."""
        async with self.db.read() as tx:
            found = await matters.cancelled_with_unread(tx)
        noted = False
        for matter_id in found:
            async with self.db.write() as tx:
                matter = await tx.get(Matter, matter_id, with_for_update=True)
                if matter is not None and matter.status == CANCELLED:
                    noted = await self._answer_unread(tx, matter) or noted
        if noted:
            await self.notifier.notify(INBOX_TOPIC)
        return len(found)

    async def _answer_unread(self, tx: AsyncSession, matter: Matter) -> bool:
        """A cancelled Matter's unread input is marked read, not acted on, and the Bot of each
        conversation it came from is told which words were not acted on (it tells the user).
        Whether a note was added."""
        unread = await matters.unread_items(tx, matter.session_id)
        if not unread:
            return False
        await inbox.mark_delivered(
            tx, [i.id for i in unread], f"matter-cancelled:{matter.id}", utcnow()
        )
        by_conversation: dict[int | None, list[str]] = {}
        for item in unread:
            origin = item.payload.get("conversation_id")
            where = origin if isinstance(origin, int) else matter.conversation_id
            words = str(item.payload.get("request") or item.payload.get("title") or "")
            by_conversation.setdefault(where, []).append(_quoted(words))
        added = False
        for conversation_id, quotes in by_conversation.items():
            text = (
                f"cancelled, so {len(quotes)} message(s) handed to it were not acted on: "
                + "; ".join(quotes)
            )
            key = f"matter-cancelled-input:{matter.id}:{unread[0].id}:{conversation_id}"
            added = (
                await self._report_in(tx, matter, "cancelled", text, key, conversation_id) or added
            )
        return added

    async def report(self, matter_id: int, kind: str, text: str, key: str) -> None:
        async with self.db.write() as tx:
            matter = await tx.get(Matter, matter_id)
            assert matter is not None
            notify = await self._report_in(tx, matter, kind, text, key)
        if notify:
            await self.notifier.notify(INBOX_TOPIC)

    @staticmethod
    async def _report_in(
        tx: AsyncSession,
        matter: Matter,
        kind: str,
        text: str,
        key: str,
        conversation_id: int | None = None,
    ) -> bool:
        """Progress, results, blockers and questions go to the Bot's inbox of the
        conversation the Matter came from (or `conversation_id`)."""
        conversation_id = conversation_id or matter.conversation_id
        if conversation_id is None:
            log.warning("matter %s has no conversation to report %s to", matter.id, kind)
            return False
        header = await tx.get(Session, matter.session_id)
        added = await inbox.append(
            tx,
            kind="task_update",
            conversation_id=conversation_id,
            payload={
                "matter_id": matter.id,
                "session_id": matter.session_id,
                "task": header.name if header else "",
                "update": kind,
                "text": f"[{kind}] task #{matter.id}: {text}",
            },
            dedupe_key=key,
            created_at=utcnow(),
        )
        return added is not None


QUOTE_CHARS = 200


def _quoted(words: str) -> str:
    one_line = " ".join(words.split())
    cut = one_line[:QUOTE_CHARS] + ("…" if len(one_line) > QUOTE_CHARS else "")
    return f"“{cut}”"


async def wake_matter(tx: AsyncSession, timer: Timer) -> None:
    """Timer handler (runs in the firing transaction): a due wake makes the Matter active."""
    matter = await tx.get(Matter, int(timer.payload["matter_id"]), with_for_update=True)
    if matter is not None and matter.status == WAITING:
        target = matter.waits_on
        if target and not target.get("outcome"):  # an event's time: say how it stands
            found = await waits.check(tx, target, utcnow())
            if found.outcome is not None:
                matter.waits_on = {**target, "outcome": found.outcome}
        await matters.set_status(tx, matter, ACTIVE, utcnow())

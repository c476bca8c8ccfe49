"""Running one round: Discovery (its notes commit as they are written), then Judgement, whose
findings are stored and queued for the Bot in the transaction that ends the round. A round found in
`judgement` (the process died after Discovery) resumes at Judgement; one found in
`discovery` starts Discovery again (its earlier notes stay: the notebook only grows).

Each finding goes to the owner's Bot inbox as a `finding` item (status `queued`); only the
Bot speaks, and the finding is delivered when the Bot's message telling it is sent
(bot/discovery/delivery.py). A finding close to one already told or queued, with no new ref
behind it, is kept as a `repeat` and not queued (bot/discovery/repeats.py)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, tzinfo

from bot.channels.ingest import INBOX_TOPIC
from bot.discovery.passes import Pass, discovery_briefing, judgement_briefing
from bot.discovery.precheck import LOOKAHEAD
from bot.discovery.repeats import repeat_of
from bot.discovery.tools import EmittedFinding, PassContext
from bot.host.backoff import error_line, log_failure
from bot.host.notify import Notifier
from bot.memory import recall
from sources.feishu import owner_items
from storage.db import Database
from storage.models import DiscoveryRound, DiscoveryState, Finding
from storage.repos import conversations, inbox, sessions
from storage.repos import discovery as repo
from storage.types import utcnow

log = logging.getLogger(__name__)
FINDING_KIND = "finding"
NOTEBOOK_SHOWN = 200  # Judgement reads the whole notebook, up to this many newest notes
EARLIER_SHOWN = 30
OWNER_PLATFORMS = ("feishu", "console")


@dataclass(frozen=True)
class RoundOutcome:
    phase: str  # done | failed
    queued: int = 0  # findings put in the owner's Bot inbox
    repeats: int = 0
    error: str | None = None


class RoundRunner:
    def __init__(
        self,
        db: Database,
        notifier: Notifier,
        access: recall.MemoryAccess,
        discovery: Pass,
        judgement: Pass,
        *,
        owner: str | None,
        tz: tzinfo,
    ) -> None:
        self.db, self.notifier, self.access = db, notifier, access
        self.discovery, self.judgement = discovery, judgement
        self.owner, self.tz = owner, tz

    async def run(
        self, round_: DiscoveryRound, state: DiscoveryState, now: datetime
    ) -> RoundOutcome:
        """`now` is the beat's time (findings are stamped with it). A pass that raises fails
        the round, as one that ends badly does: left open, every beat ran it again, and its
        model calls with it (a killed process's round, cancelled, stays open and resumes)."""
        try:
            return await self._run(round_, state, now)
        except Exception as exc:
            log_failure(log, f"discovery round {round_.id} raised", exc)
            return await self._fail(round_, error_line(exc))

    async def _run(
        self, round_: DiscoveryRound, state: DiscoveryState, now: datetime
    ) -> RoundOutcome:
        if round_.phase == "discovery":
            ctx = self._context(round_, "discovery")
            async with self.db.read() as tx:
                notes = await repo.notes(tx, limit=NOTEBOOK_SHOWN)
                soon = await owner_items.upcoming(tx, now, now + LOOKAHEAD)
            briefing = discovery_briefing(round_.reason, notes, ctx, soon)
            result = await self.discovery.run(ctx, briefing)
            if not result.ok:
                return await self._fail(round_, result.error or "failed")
            async with self.db.write() as tx:
                row = await tx.get(DiscoveryRound, round_.id)
                assert row is not None
                row.phase = "judgement"
            await self._log(state, "discovery", f"round {round_.id}: {ctx.notes_added} notes")
        return await self._judge(round_, state, now)

    async def _judge(
        self, round_: DiscoveryRound, state: DiscoveryState, now: datetime
    ) -> RoundOutcome:
        ctx = self._context(round_, "judgement")
        async with self.db.read() as tx:
            notes = await repo.notes(tx, limit=NOTEBOOK_SHOWN)
            earlier = await repo.told_findings(tx, EARLIER_SHOWN)
            feedback = await repo.feedback_of(tx, [f.id for f in earlier])
            soon = await owner_items.upcoming(tx, now, now + LOOKAHEAD)
        briefing = judgement_briefing(round_.reason, notes, earlier, feedback, ctx, soon)
        result = await self.judgement.run(ctx, briefing)
        if not result.ok:
            return await self._fail(round_, result.error or "failed")
        outcome = await self._finish(round_, ctx.findings, now)
        await self._log(
            state,
            "judgement",
            f"round {round_.id}: {outcome.queued} findings for the Bot, "
            f"{outcome.repeats} repeats dropped, {ctx.notes_added} notes",
        )
        return outcome

    async def _finish(
        self, round_: DiscoveryRound, emitted: list[EmittedFinding], now: datetime
    ) -> RoundOutcome:
        queued = repeats = 0
        async with self.db.write() as tx:
            row = await tx.get(DiscoveryRound, round_.id)
            assert row is not None
            if row.phase != "judgement":  # finished by someone else already
                return RoundOutcome(row.phase)
            dm = await self._owner_dm(tx)
            told = await repo.told_findings(tx, limit=500)
            for ordinal, item in enumerate(emitted, start=1):
                earlier = repeat_of(item.text, item.refs, told)
                status = repo.REPEAT if earlier else (repo.QUEUED if dm else repo.UNDELIVERED)
                finding = await repo.add_finding(
                    tx,
                    Finding(round_id=row.id, ordinal=ordinal, text=item.text, refs=item.refs,
                            status=status, repeat_of=earlier.id if earlier else None,
                            created_at=now),
                )  # fmt: skip
                if status == repo.REPEAT:
                    repeats += 1
                    continue
                if dm is not None:
                    await inbox.append(
                        tx, kind=FINDING_KIND, payload=finding_payload(finding),
                        conversation_id=dm, dedupe_key=repo.finding_item_key(finding.id),
                        created_at=now,
                    )  # fmt: skip
                    told.append(finding)
                    queued += 1
            row.phase, row.findings, row.finished_at = "done", queued, now
        if queued:
            await self.notifier.notify(INBOX_TOPIC)
        return RoundOutcome("done", queued, repeats)

    async def _owner_dm(self, tx: object) -> int | None:
        if not self.owner:
            return None
        for platform in OWNER_PLATFORMS:
            dm = await conversations.find_dm(tx, platform, self.owner)  # type: ignore[arg-type]
            if dm is not None:
                return dm.id
        return None

    async def _fail(self, round_: DiscoveryRound, error: str) -> RoundOutcome:
        async with self.db.write() as tx:
            row = await tx.get(DiscoveryRound, round_.id)
            assert row is not None
            row.phase, row.reason = "failed", f"{row.reason}; failed: {error}"[:2000]
            row.finished_at = utcnow()
        log.warning("discovery round %s failed: %s", round_.id, error)
        return RoundOutcome("failed", error=error)

    def _context(self, round_: DiscoveryRound, author: str) -> PassContext:
        return PassContext(self.db, self.access, self.tz, round_.id, author)

    async def _log(self, state: DiscoveryState, role: str, text: str) -> None:
        async with self.db.write() as tx:
            row = await tx.get(DiscoveryState, state.id)
            assert row is not None
            session_id = await repo.role_session(tx, row, role, utcnow())
            await sessions.append_events(tx, session_id, [("status", text, None)], utcnow())


def finding_payload(finding: Finding) -> dict[str, object]:
    refs = ", ".join(finding.refs)
    return {
        "text": f"F-{finding.id}: {finding.text} (evidence: {refs})",
        "finding": finding.id,
    }

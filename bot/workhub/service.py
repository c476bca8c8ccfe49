"""WorkHub as the Bot (and task Sessions) use it: candidate sets for a requester, and the
Action Gate for every routing write."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from enum import StrEnum
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from bot.assistant.access import Role
from bot.assistant.visibility import Visibility
from bot.config import RecallMode
from bot.host.notify import Notifier
from bot.memory.search import SearchService
from bot.memory.session_index import TOPIC as SESSION_INDEX_TOPIC
from bot.workhub.candidates import (
    MAX_CANDIDATES,
    CandidateSet,
    Evidence,
    SessionMeta,
    build_set,
)
from bot.workhub.evidence import EvidenceStrategy, Searcher, gather_evidence
from bot.workhub.new_task import agrees, asks_for_new
from bot.workhub.recall import Recall
from bot.workhub.router import Decision
from bot.workhub.summaries import shares_little
from storage.db import Database
from storage.models import Session
from storage.repos import inbox, operations, sessions, workhub
from storage.types import utcnow

SESSION_INBOX_TOPIC = "session_inbox"
OFFER_KINDS = ("finding",)  # inbox items the Bot may offer to the user as a new task
OFFER_STANDS = timedelta(hours=24)
PAGE = 64


class Refusal(StrEnum):
    STALE = "candidate_set_stale"
    UNAVAILABLE = "candidate_unavailable"
    SELF_ROUTE = "self_route"
    CONFLICT = "action_conflict"
    NOT_ASKED = "new_task_not_requested"
    NAMES_A_TASK = "request_names_a_task"
    CANCELLED = "candidate_cancelled"


CANCELLED_STATE = "cancelled"  # a task Session whose Matter was cancelled (no follow-ups)


@dataclass(frozen=True)
class Requester:
    conversation_id: int
    open_id: str
    role: Role
    visibility: Visibility  # which Sessions may be candidates (bot/assistant/visibility.py)
    origin_session_id: int | None = None  # set when a task Session itself routes


@dataclass(frozen=True)
class GateResult:
    ok: bool
    refusal: Refusal | None = None
    session_id: int | None = None
    converged: bool = False  # a retry of a write that already happened
    detail: str = ""


def fingerprint(kind: str, payload: dict[str, Any]) -> str:
    blob = json.dumps([kind, payload], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


async def assemble(
    metas: list[SessionMeta],
    summaries: dict[str, str],
    searcher: Searcher,
    query: str | None,
    strategy: EvidenceStrategy,
    *,
    now: datetime,
    tz: tzinfo,
) -> CandidateSet:
    """Evidence for `query` among these Sessions, then the set (the service and the
    evaluation both build sets here)."""
    evidence: dict[str, Evidence] = {}
    status = "none"
    if query:
        evidence, status = await gather_evidence(searcher, query, [m.id for m in metas], strategy)
    return build_set(
        metas, now=now, tz=tz, summaries=summaries, evidence=evidence, evidence_status=status
    )


def meta_of(row: Session) -> SessionMeta:
    return SessionMeta(
        id=str(row.id),
        name=row.name,
        workspace=row.workspace,
        state=row.state,
        created_at=row.created_at,
        status_updated_at=row.status_updated_at,
        last_message_at=row.last_message_at,
        role=row.role,
        is_archived=row.is_archived,
        subagent_parent=str(row.subagent_parent) if row.subagent_parent else None,
        labels=tuple(row.labels or ()),
    )


class WorkHub:
    def __init__(
        self,
        db: Database,
        notifier: Notifier,
        search: SearchService,
        *,
        tz: tzinfo,
        strategy: EvidenceStrategy = EvidenceStrategy.BEST_MESSAGE,
        recaller: Recall | None = None,
    ) -> None:
        self.db, self.notifier, self.search = db, notifier, search
        self.tz, self.strategy = tz, strategy
        self.recaller = recaller or Recall(RecallMode.REFERENCE, None, tz)

    async def candidates(
        self, requester: Requester, query: str | None = None, now: datetime | None = None
    ) -> CandidateSet:
        metas, summaries = await self._load(requester)
        return await assemble(
            metas, summaries, self.search, query, self.strategy, now=now or utcnow(), tz=self.tz
        )

    async def recall(
        self, requester: Requester, request: str
    ) -> tuple[CandidateSet, Decision | None]:
        """The candidates with evidence for the user's words, and Recall's proposal."""
        cset = await self.candidates(requester, request)
        return cset, await self.recaller.propose(request, cset)

    async def _load(self, requester: Requester) -> tuple[list[SessionMeta], dict[str, str]]:
        """The requester's 32 most recent eligible Sessions (the visibility rule first)."""
        visibility = requester.visibility
        if visibility.sees_nothing:
            return [], {}
        within = visibility.only_conversation
        metas: list[SessionMeta] = []
        async with self.db.read() as tx:
            offset = 0
            while len(metas) < MAX_CANDIDATES:
                rows = await workhub.sessions_by_activity(
                    tx, conversation_id=within, offset=offset, limit=PAGE
                )
                metas += [m for m in map(meta_of, rows) if m.eligible]
                if len(rows) < PAGE:
                    break
                offset += PAGE
            metas = metas[:MAX_CANDIDATES]
            texts = await workhub.summaries_for(tx, [int(m.id) for m in metas])
        return metas, {str(k): v for k, v in texts.items()}

    async def delegate(
        self,
        requester: Requester,
        *,
        action_id: str,
        candidate_set_id: str,
        candidate_ref: str,
        payload: dict[str, Any],
    ) -> GateResult:
        # The set and the ref are part of what is written: the same id with another target
        # is a conflicting reuse, not a retry.
        payload = {**payload, "candidate_set_id": candidate_set_id, "candidate_ref": candidate_ref}
        earlier = await self._earlier(action_id)
        if earlier is not None:
            return self._converge(earlier, "delegate", payload)
        current = await self.candidates(requester)
        if current.set_id != candidate_set_id:
            return GateResult(
                False, Refusal.STALE, detail="the candidates changed: list them again"
            )
        candidate = current.by_ref(candidate_ref)
        if candidate is None:
            return GateResult(
                False, Refusal.UNAVAILABLE, detail="that task is not among the current candidates"
            )
        target = int(candidate.meta.id)
        if requester.origin_session_id == target:
            return GateResult(False, Refusal.SELF_ROUTE, detail="a task cannot route to itself")
        return await self._write("delegate", action_id, target, payload)

    async def create(
        self, requester: Requester, *, action_id: str, title: str, payload: dict[str, Any]
    ) -> GateResult:
        payload = {"title": title, **payload}
        earlier = await self._earlier(action_id)
        if earlier is not None:
            return self._converge(earlier, "create", payload)
        request = str(payload.get("request") or "")
        offered = agrees(request) and await self._offered(requester.conversation_id)
        refused = self._creation_refused(request, await self.candidates(requester), offered)
        if refused is not None:
            return refused
        return await self._write("create", action_id, None, payload, new_session=(title, requester))

    async def _offered(self, conversation_id: int) -> bool:
        """Did the assistant bring this chat something to offer as a task lately (a finding
        from discovery, bot/discovery/)? Then a plain yes is the user asking for it."""
        async with self.db.read() as tx:
            return await inbox.has_recent(tx, conversation_id, OFFER_KINDS, utcnow() - OFFER_STANDS)

    @staticmethod
    def _creation_refused(
        request: str, current: CandidateSet, offered: bool = False
    ) -> GateResult | None:
        """A new task only when this turn's user words ask for one (invariant 9 in
        docs/design.md), or say yes to a task the assistant offered; never for words that
        name a task the requester already has."""
        named = [c for c in current.candidates if _names(request, c.meta.name)]
        if named:
            return GateResult(
                False,
                Refusal.NAMES_A_TASK,
                detail=f"the user's words name the task {named[0].meta.name!r} "
                f"({named[0].ref}); delegate there, or ask whether they want a new one",
            )
        if not offered and not asks_for_new(request, [c.meta.name for c in current.candidates]):
            return GateResult(
                False,
                Refusal.NOT_ASKED,
                detail="the user did not ask for a new task; ask them which task they mean "
                "or whether to start a new one",
            )
        return None

    async def _earlier(self, action_id: str) -> Any:
        async with self.db.read() as tx:
            return await operations.get(tx, action_id)

    def _converge(self, earlier: Any, kind: str, payload: dict[str, Any]) -> GateResult:
        if earlier.kind == kind and earlier.fingerprint == fingerprint(kind, payload):
            return GateResult(True, session_id=earlier.subject_id, converged=True)
        return GateResult(
            False, Refusal.CONFLICT, detail="this action id was used for a different write"
        )

    async def _write(
        self,
        kind: str,
        action_id: str,
        target: int | None,
        payload: dict[str, Any],
        new_session: tuple[str, Requester] | None = None,
    ) -> GateResult:
        now = utcnow()
        print_ = fingerprint(kind, payload)
        async with self.db.write() as tx:
            if kind == "delegate" and target is not None:
                cancelled = await self._cancelled(tx, target)
                if cancelled is not None:
                    await tx.rollback()
                    return cancelled
            if new_session is not None:
                title, requester = new_session
                row = Session(
                    name=title[:256],
                    state="active",
                    labels=[],
                    is_archived=False,
                    conversation_id=requester.conversation_id,
                    created_by=requester.open_id,
                    created_at=now,
                    status_updated_at=now,
                    last_message_at=now,
                )
                tx.add(row)
                await tx.flush()
                target = row.id
            earlier = await operations.claim(
                tx,
                operation_id=action_id,
                kind=kind,
                subject_id=target,
                fingerprint=print_,
                outcome={"session_id": target},
                now=now,
            )
            if earlier is not None:  # lost a race with an identical or conflicting write
                await tx.rollback()
                return self._converge(earlier, kind, payload)
            await inbox.append(
                tx,
                kind="delegation",
                session_id=target,
                payload={"action": kind, **payload},
                dedupe_key=f"workhub:{action_id}",
                created_at=now,
            )
            assert target is not None
            logged = await self._log_request(tx, kind, target, payload, now)
        await self.notifier.notify(SESSION_INBOX_TOPIC)
        if logged:  # the search follower indexes the request (routing evidence)
            await self.notifier.notify(SESSION_INDEX_TOPIC)
        return GateResult(True, session_id=target)

    @staticmethod
    async def _cancelled(tx: AsyncSession, target: int) -> GateResult | None:
        """A cancelled task takes no follow-ups: its input would wait unread. Read with the
        row locked, in the write's transaction, so a cancel cannot slip in between (a
        cancel changes the Session's state in its own transaction: one waits for the other)."""
        header = await tx.get(Session, target, with_for_update=True)
        if header is None or header.state != CANCELLED_STATE:
            return None
        return GateResult(
            False,
            Refusal.CANCELLED,
            detail=f"the task {header.name!r} was cancelled and takes no follow-ups, so "
            "nothing was handed to it; tell the user, and start a new task only if their "
            "words ask for one",
        )

    @staticmethod
    async def _log_request(
        tx: AsyncSession, kind: str, target: int, payload: dict[str, Any], now: datetime
    ) -> bool:
        """The user's words handed over become the task Session's own log (its summary and
        search evidence are built from it); a request on another topic than the summary
        marks the summary stale."""
        request = str(payload.get("request") or "")
        header = await tx.get(Session, target)
        if header is None or not request:
            return False
        await sessions.append_events(tx, target, [("user", request, {"via": kind})], now)
        if kind == "delegate":
            summary = (await workhub.summaries_for(tx, [target])).get(target)
            if summary and shares_little(request, summary):
                await workhub.mark_stale(tx, target)
        return True


MIN_NAME_CHARS = 4  # shorter names ("Bug") are words, not references


def _names(request: str, task_name: str) -> bool:
    name = " ".join(task_name.lower().split())
    return len(name) >= MIN_NAME_CHARS and name in " ".join(request.lower().split())

"""A discovery world without the web app: the real heartbeat, round runner, passes and tools
over a real database and search index, each pass with its own scripted model (so a test
counts the calls of each), calls recorded in `model_calls` as in production (the budget
reads them there). Time is the test's: every beat is given its `now`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bot.assistant.visibility import Visibility
from bot.discovery.heartbeat import Beat, DiscoveryWorker
from bot.discovery.passes import DISCOVERY_PROMPT, JUDGEMENT_PROMPT, Pass
from bot.discovery.rounds import RoundRunner
from bot.discovery.tools import discovery_tools, judgement_tools
from bot.host.notify import Notifier
from bot.llm.client import ModelClient
from bot.llm.recording import DatabaseRecorder
from bot.llm.scripted import ScriptedProvider
from bot.memory import recall
from bot.memory.search import SearchService
from storage.db import Database
from storage.models import (
    DiscoveryRound,
    DiscoveryState,
    Finding,
    FindingFeedback,
    InboxItem,
    OutboxMessage,
)
from storage.repos import conversations, inbox, outbox, reactions, source_records
from storage.repos import discovery as repo
from storage.repos import sources as source_repo
from storage.repos.reply_keys import reply_key
from storage.repos.source_records import NewRecord
from storage.search.embedded import EmbeddedSearchIndex
from storage.types import utcnow

OWNER = "ou_owner"
send = ScriptedProvider.tool_call
DEFAULTS = repo.Defaults(
    enabled=True, interval_seconds=1800, quiet=None, budget_tokens=50_000,
    deep_every_seconds=7 * 86_400,
)  # fmt: skip
# A fixed morning, so quiet hours and the owner's day are the test's, not the machine's.
MORNING = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def end_pass() -> Any:
    return send("pass_end", {})


class DiscoveryWorld:
    def __init__(self, db: Database, tmp_path: Path, defaults: repo.Defaults = DEFAULTS) -> None:
        self.db = db
        self.discovery = ScriptedProvider(name="discovery")
        self.judgement = ScriptedProvider(name="judgement")
        recorder = DatabaseRecorder(db)
        access = recall.MemoryAccess(
            db, SearchService(EmbeddedSearchIndex(tmp_path / "index")),
            Visibility(everything=True, conversation_id=None), UTC,
        )  # fmt: skip
        self.runner = RoundRunner(
            db, Notifier(), access,
            Pass(ModelClient(self.discovery, recorder), discovery_tools(),
                 purpose="discovery_turn", system=DISCOVERY_PROMPT, timeout=30),
            Pass(ModelClient(self.judgement, recorder), judgement_tools(),
                 purpose="judgement_turn", system=JUDGEMENT_PROMPT, timeout=30),
            owner=OWNER, tz=UTC,
        )  # fmt: skip
        self.defaults = defaults
        self.worker = self.new_worker()
        self.records = 0

    def new_worker(self) -> DiscoveryWorker:
        """A worker as a restarted process would make it (same database)."""
        return DiscoveryWorker(
            self.db, self.runner, self.defaults, owner=f"test-{utcnow().timestamp()}", tz=UTC,
            lease=timedelta(minutes=5),
        )  # fmt: skip

    @property
    def calls(self) -> int:
        return len(self.discovery.requests) + len(self.judgement.requests)

    async def beat(self, now: datetime) -> Beat:
        return await self.worker.beat(now)

    async def owner_dm(self) -> int:
        async with self.db.write() as s:
            dm = await conversations.get_or_create(
                s, platform="feishu", chat_id="oc_owner_dm", chat_type="p2p", peer_open_id=OWNER
            )
        return dm.id

    async def add_record(self, text: str, when: datetime) -> int:
        self.records += 1
        record = NewRecord("feishu:oc_team", f"om_{self.records}", "group:oc_team", text, when,
                           author="ou_li", title="Team")  # fmt: skip
        async with self.db.write() as s:
            await source_repo.ensure(s, name="feishu:oc_team", kind="feishu",
                                     scope="group:oc_team", title="Team", now=when)  # fmt: skip
            [(seq, _, _)] = await source_records.insert_records(s, [record], when)
        return seq

    async def owner_says(
        self, text: str, when: datetime, *, replying_to: str | None = None
    ) -> None:
        """A message of the owner's in their DM, as ingest stores it (a reply or quote of a
        message carries that message as its parent)."""
        dm = await self.owner_dm()
        self.records += 1
        payload = {"text": text, "sender_id": OWNER, "message_id": f"om_owner_{self.records}",
                   "parent_id": replying_to, "root_id": replying_to}  # fmt: skip
        async with self.db.write() as s:
            await inbox.append(s, kind="user_message", payload=payload, conversation_id=dm,
                               created_at=when)  # fmt: skip

    async def bot_tells(
        self, finding: Finding, when: datetime, *, states: tuple[str, ...] = ("sent",)
    ) -> str:
        """What the Bot does with a finding: a turn handles its inbox item and writes one
        reply per state given, which a sender then leaves in that state
        (`sender_settles`). The first sent reply's message id ("" if none was sent)."""
        async with self.db.write() as s:
            item = await s.scalar(
                select(InboxItem).where(InboxItem.dedupe_key == f"finding:{finding.id}")
            )
            assert item is not None
            turn = f"c{item.conversation_id}-i{item.id}"  # the Bot's turn key
            for n in range(len(states)):
                await outbox.enqueue(
                    s, idempotency_key=reply_key(turn, n), platform="feishu",
                    chat_id="oc_owner_dm", conversation_id=item.conversation_id,
                    content_type="text", content={"text": "heads-up"}, now=when,
                )  # fmt: skip
            await inbox.mark_delivered(s, [item.id], turn, when)
        told = [await self.sender_settles(turn, n, state, when) for n, state in enumerate(states)]
        return next((message_id for message_id in told if message_id), "")

    async def sender_settles(self, turn: str, n: int, state: str, when: datetime) -> str:
        """A turn's `n`th reply left `state` by the sender; its message id when sent."""
        message_id = f"om_told_{turn}_{n}" if state == "sent" else ""
        async with self.db.write() as s:
            row = await s.scalar(
                select(OutboxMessage).where(OutboxMessage.idempotency_key == reply_key(turn, n))
            )
            assert row is not None
            row.state = state
            if state == "sent":
                row.sent_at, row.platform_message_ids = when, [message_id]
        return message_id

    async def react(self, message_id: str, emoji: str, when: datetime, who: str = OWNER) -> None:
        self.records += 1
        async with self.db.write() as s:
            await reactions.add_if_new(s, platform="feishu", event_id=f"ev_{self.records}",
                                       message_id=message_id, operator_id=who, emoji=emoji,
                                       created_at=when, received_at=when)  # fmt: skip

    async def feedback(self) -> list[FindingFeedback]:
        async with self.db.read() as s:
            stmt = select(FindingFeedback).order_by(FindingFeedback.id)
            return list((await s.scalars(stmt)).all())

    async def rounds(self, phase: str | None = None) -> list[DiscoveryRound]:
        async with self.db.read() as s:
            stmt = select(DiscoveryRound).order_by(DiscoveryRound.id)
            if phase:
                stmt = stmt.where(DiscoveryRound.phase == phase)
            return list((await s.scalars(stmt)).all())

    async def findings(self) -> list[Finding]:
        async with self.db.read() as s:
            return list((await s.scalars(select(Finding).order_by(Finding.id))).all())

    async def finding_items(self) -> list[InboxItem]:
        async with self.db.read() as s:
            stmt = select(InboxItem).where(InboxItem.kind == "finding").order_by(InboxItem.id)
            return list((await s.scalars(stmt)).all())

    async def state(self) -> DiscoveryState:
        async with self.db.read() as s:
            state = await repo.get_state(s)
        assert state is not None
        return state

    async def change_state(self, **values: Any) -> None:
        async with self.db.write() as s:
            state = await repo.ensure_state(s, self.defaults, MORNING)
            for key, value in values.items():
                setattr(state, key, value)

"""Growth figures for what runs per message or per cycle whatever the history: a Bot turn's
fixed cost, the discovery pre-check and a memory index's check (registered in growth.py's
MORE; each figure is the median of REPEATS runs on the running app over the filled history).

- Bot turn: the owner's DM posted to the real webhook (not timed), then one turn of the real
  `BotWorker.work` (lease, start transaction with the history read, the agent loop, the reply
  written to the outbox, the batch marked delivered and the turn logged), timed from the turn
  starting to it returning. The model is `ScriptedProvider` answering at once (send_user, then
  sleep: two model calls), so the figure is the turn without the model's own time. The app
  runs as role web (no workers): the worker is made here on the app's Services, with the
  scripted model and an owner set in a copy of them, and the outbox is not sent to Feishu.
  The DM chat's own history is the turns before (the same number at every size); the filled
  history is other chats' messages, as an owner's would be.
- discovery pre-check: `bot.discovery.heartbeat.pre_check`, the reads every due beat makes
  (newest record, entries, notes, feedback, Matters and deadlines near, events and tasks
  coming up, today's tokens) and the decision; not the beat's claim or its skip's write.
- index check: `IndexMaintenanceWorker._check` (the worker's check of one due index, its
  reads and its status write; the turn that would then work a range is not run): an index
  20 records behind over every chat, one scoped to one chat and 20 of its records behind
  (about 4,000 ids of every chat to scan for gaps), and one of a chat quiet since the
  history began, checked once (nothing new) and then given one message. Each timed check
  scans for gaps from where the check before it left off, as in the cycle; the first check
  after a start scans from the coverage, for a quiet chat's index the whole history since
  its last record (once per process, not timed here).
"""

from __future__ import annotations

import dataclasses
import itertools
import statistics
import time
from functools import partial
from typing import Any

from _growth_common import CHATS, NOW, REPEATS, median_ms
from sqlalchemy import func, select

from bot.assistant.component import Assistant
from bot.assistant.worker import BotWorker
from bot.discovery.commands import defaults_of
from bot.discovery.heartbeat import pre_check
from bot.llm.client import ModelClient
from bot.llm.recording import DatabaseRecorder
from bot.llm.scripted import ScriptedProvider
from bot.memory.indexes.commands import index_service
from bot.memory.indexes.maintenance import IndexMaintenanceWorker
from bot.memory.indexes.tools import indexer_tools
from bot.memory.indexes.turn import IndexerTurn
from bot.services import Services
from storage.models import InboxItem, MemoryIndex, OutboxMessage, SourceRecord
from storage.repos import discovery, source_records, sources
from storage.repos import memory_indexes as indexes
from storage.repos.source_records import NewRecord
from storage.types import utcnow
from tests.fakes import FeishuEventSender

OWNER = "ou_bench_owner"
REPLY = "noted"
_FRESH = itertools.count()  # ids and names new on every call, on the same database
BEHIND = 20  # records an index has still to take in when it is checked (of its scope)


async def figures(app: Any, messages: int) -> dict[str, float]:
    services: Services = app.services
    return {
        "Bot turn ms": await _turn_ms(app),
        "discovery pre-check ms": await _pre_check_ms(services),
        **await _index_check_ms(services),
    }


async def _turn_ms(app: Any) -> float:
    services: Services = app.services
    settings = services.settings.model_copy(update={"owner": OWNER})
    steps = [ScriptedProvider.tool_call("send_user", {"text": REPLY}), _SLEEP] * (REPEATS + 1)
    model = ModelClient(ScriptedProvider(steps), DatabaseRecorder(services.db))
    bot = dataclasses.replace(services, settings=settings, model=model)
    assistant = Assistant()
    worker = BotWorker(bot, assistant.commands, assistant.tools)
    assert settings.feishu_encrypt_key and settings.feishu_verification_token
    sender = FeishuEventSender(
        f"{app.url}/feishu/events",
        app_id=settings.feishu_app_id or "",
        encrypt_key=settings.feishu_encrypt_key.get_secret_value(),
        verification_token=settings.feishu_verification_token.get_secret_value(),
    )
    times = []
    for n in range(REPEATS + 1):  # the first warms
        event = sender.message_event(
            text=f"turn {n}: what was decided about the launch?",
            message_id=f"om_turn_{next(_FRESH)}",
            chat_id="oc_bench_dm",
            chat_type="p2p",
            sender_open_id=OWNER,
        )
        status, body = await sender.post(event, http=app.http)
        if status != 200:
            raise RuntimeError(f"webhook answered {status}: {body[:200]}")
        async with services.db.read() as tx:
            conversation = await tx.scalar(
                select(InboxItem.conversation_id).order_by(InboxItem.id.desc()).limit(1)
            )
            replies_before = await _replies(tx, conversation)
        assert conversation is not None
        started = time.perf_counter()
        await worker.work(conversation)
        elapsed = (time.perf_counter() - started) * 1000
        async with services.db.read() as tx:  # a failed turn is recorded, not raised: check
            if await _replies(tx, conversation) != replies_before + 1:
                raise RuntimeError(f"turn {n} wrote no reply (see the log)")
        if n:
            times.append(elapsed)
    return statistics.median(times)


_SLEEP = ScriptedProvider.tool_call("sleep", {})


async def _replies(tx: Any, conversation: int | None) -> int:
    return int(
        await tx.scalar(
            select(func.count(OutboxMessage.id)).where(
                OutboxMessage.conversation_id == conversation,
                OutboxMessage.content_type == "text",
            )
        )
        or 0
    )


async def _pre_check_ms(services: Services) -> float:
    now = utcnow()
    state = discovery.state_of(defaults_of(services), now)
    tz = services.settings.tz
    return await median_ms(lambda: pre_check(services.db, state, now, tz))


async def _index_check_ms(services: Services) -> dict[str, float]:
    worker = _index_worker(services)
    out = {}
    for label, scope in (
        ("index check ms", None),
        ("index check (one chat) ms", f"feishu:oc_{CHATS - 1}"),
    ):
        async with services.db.read() as tx:  # it has taken in all but the newest BEHIND
            covered = await tx.scalar(
                select(SourceRecord.id)
                .where(*([] if scope is None else [SourceRecord.scope == scope]))
                .order_by(SourceRecord.id.desc())
                .offset(BEHIND)
                .limit(1)
            )
        assert covered is not None
        index = await _new_index(services, label, scope, covered)
        out[label] = await median_ms(partial(_check, worker, index, None))
    # A chat quiet since the history began: its index was checked (nothing new) as the
    # other chats grew, then one message came.
    quiet_chat = f"feishu:oc_quiet_{next(_FRESH)}"  # no record yet
    index = await _new_index(services, "quiet chat", quiet_chat, 0)
    await worker._check(index)  # nothing new: the ids it saw are settled
    settled = worker.settled[index.id]
    async with services.db.write() as tx:
        await sources.ensure(tx, name=quiet_chat, kind="feishu", scope=None, title=None, now=NOW)
        word = NewRecord(quiet_chat, "om_quiet", quiet_chat, "at last, a word here", NOW)
        await source_records.add_records(tx, [word], NOW)
    async with services.db.read() as tx:
        quiet = await tx.get(MemoryIndex, index.id)
    assert quiet is not None
    out["index check (quiet chat) ms"] = await median_ms(partial(_check, worker, quiet, settled))
    return out


async def _new_index(
    services: Services, label: str, scope: str | None, covered: int
) -> MemoryIndex:
    async with services.db.write() as tx:
        index = await indexes.create(
            tx,
            name=f"{label} {next(_FRESH)}",
            criteria="decisions and their owners",
            scopes=None if scope is None else [scope],
            conversation_id=None,
            created_by=OWNER,
            interval_seconds=3600,
            now=utcnow(),
        )
        assert index is not None
        index.covered_cursor = covered
    return index


async def _check(worker: IndexMaintenanceWorker, index: MemoryIndex, settled: int | None) -> None:
    """The check as the cycle runs it: its gap scan from where the check before it left off
    (`settled`; None: from the coverage), not from what the timed run before it saw."""
    if settled is None:
        worker.settled.pop(index.id, None)
    else:
        worker.settled[index.id] = settled
    if await worker._check(index) is None:  # the range it opens; None: nothing, or it failed
        raise RuntimeError(f"the check of {index.name!r} found nothing to take in")


def _index_worker(services: Services) -> IndexMaintenanceWorker:
    """As the memory-indexes component makes it; its model is never called by a check."""
    model = ModelClient(ScriptedProvider(), DatabaseRecorder(services.db))
    return IndexMaintenanceWorker(
        services.db,
        index_service(services),
        IndexerTurn(model, indexer_tools(), timeout=services.settings.index_turn_timeout),
        owner=services.host.instance_id,
        tz=services.settings.tz,
    )

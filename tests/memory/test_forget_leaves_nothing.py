"""What a forget leaves of a chat message beyond its record: its stored event and inbox item
keep their row (a redelivery stays a duplicate) but not its words; the Bot's answer, in the
turn's log and in the outbox, goes; the history and WorkHub summaries made since are dropped
(their digests leave search, and are asked for again); discovery findings citing it are
withdrawn. Checked as a grep would: every text column of those tables, for the words."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import Table, select, update

from bot.llm.scripted import ScriptedProvider
from bot.workhub.summaries import rebuild_digests
from storage.db import Database
from storage.models import (
    Conversation,
    Finding,
    ForgetRequest,
    InboundEvent,
    InboxItem,
    IndexEntry,
    NotebookNote,
    OutboxMessage,
    Session,
    SessionEvent,
    SessionSummary,
)
from storage.repos import conversations, inbound, inbox, sessions
from storage.repos import discovery as discovery_repo
from storage.repos import source_records as source_repo
from storage.repos.reply_keys import reply_key
from storage.repos.source_records import NewRecord
from storage.repos.taken_back import RECALLED
from storage.types import utcnow
from tests.assistant.support import bot_world, replies, say, send
from tests.feishu_world import WorldFactory
from tests.memory.test_forget import at, forget
from tests.waiting import wait_until

TABLES = (
    InboundEvent,
    InboxItem,
    OutboxMessage,
    SessionEvent,
    SessionSummary,
    Finding,
    NotebookNote,
    IndexEntry,
)
TEAM, OTHER, TURN = "feishu:oc_team", "feishu:oc_other", "turn-7"


async def rows_saying(db: Database, word: str) -> list[str]:
    """Every row of TABLES with `word` in any of its columns (text and JSON alike)."""
    found = []
    async with db.read() as tx:
        for model in TABLES:
            table = cast(Table, model.__table__)
            for row in (await tx.execute(select(table))).all():
                if word in repr(tuple(row)):
                    found.append(f"{table.name}: {tuple(row)!r}")
    return found


async def test_a_forgotten_message_leaves_its_event_its_item_the_answer_and_the_digest(
    make_world: WorldFactory,
) -> None:
    model = ScriptedProvider([send("send_user", {"text": "noted narwhal512"}), send("sleep", {})])
    async with bot_world(make_world, model) as w:
        services = w.app.services
        event = await say(w, "my locker is narwhal512")
        assert await replies(w, 1) == ["noted narwhal512"]
        # The chat's Session summarized since, and its digest in search, as the summary
        # worker writes them.
        async with services.db.write() as tx:
            conv = await tx.scalar(
                select(Conversation).where(Conversation.chat_id == "oc_owner_dm")
            )
            assert conv is not None and conv.coordination_session_id is not None
            chat_session = conv.coordination_session_id
            tx.add(
                SessionSummary(
                    session_id=chat_session,
                    text="the owner keeps narwhal512 in mind",
                    covered_seq=2,
                    completion_count=1,
                    requested_at_count=1,
                    summarized_at_count=1,
                    generated_at=utcnow(),
                )
            )
        assert await rebuild_digests(services.db, services.search) == 1

        async def kinds_found() -> set[str]:
            return {h.kind for h in await services.search.search("narwhal512")}

        async def all_in_search() -> bool:
            wanted = {"session_user", "session_assistant", "session_digest"}
            return wanted <= await kinds_found()

        await wait_until(all_in_search, what="the message, the answer and the digest in search")
        assert await rows_saying(services.db, "narwhal512")  # the check sees them before

        await say(w, "/forget chat oc_owner_dm confirm")
        answer = (await replies(w, 2))[1]
        assert "Forgot chat oc_owner_dm" in answer and "1 summaries dropped" in answer, answer

        async def gone() -> bool:
            return not await kinds_found()

        await wait_until(gone, what="the forgotten words out of search, digest and answer too")
        assert await rows_saying(services.db, "narwhal512") == []
        async with services.db.read() as tx:
            [request] = (await tx.scalars(select(ForgetRequest))).all()
            summary = await tx.get(SessionSummary, chat_session)
        assert request.removed["answers_redacted"] == 2, request.removed  # the log's, the outbox's
        assert request.removed["payloads_blanked"] >= 2, request.removed  # the event, the item
        assert summary is not None and summary.text is None
        assert summary.requested_at_count > summary.summarized_at_count  # asked for again

        async def summarized_again() -> bool:
            return len(model.requests) >= 3  # the turn's two calls, then the summary's

        await wait_until(summarized_again, what="the summary worker to write it again")
        asked = " ".join(m.content or "" for m in model.requests[2][0])
        assert "Session:" in asked and "narwhal512" not in asked, asked  # from the redacted log

        # Feishu delivers the forgotten message again: still a duplicate, never answered.
        status, body = await w.events.post(event)
        assert status == 200 and '"outcome": "duplicate"' in body, body
        assert await rows_saying(services.db, "narwhal512") == []


async def seed_team(db: Database) -> dict[str, Any]:
    """A team chat's message the Bot answered (its event, item, turn log with a history
    summary after it, two replies, one not sent yet), a task Session of the chat summarized
    since, and a finding citing the message waiting to be told; and the same of another chat."""
    now = utcnow()
    seen: dict[str, Any] = {}
    async with db.write() as tx:
        found = await conversations.get_or_create_many(
            tx,
            [
                conversations.NewConversation("feishu", "oc_team", "group"),
                conversations.NewConversation("feishu", "oc_other", "group"),
            ],
        )
        made = await source_repo.insert_records(
            tx,
            [
                NewRecord(
                    TEAM, "m1", "group:oc_team", "falcon budget 7M", at("2026-01-10"), "ou_a"
                ),
                NewRecord(OTHER, "m3", "group:oc_other", "osprey plan", at("2026-01-11"), "ou_b"),
            ],
            now,
        )
        seqs = {e: i for i, _s, e in made}
        round_id = (await discovery_repo.open_round(tx, "test", {}, now)).id
        for chat, message, word in (("oc_team", "m1", "falcon"), ("oc_other", "m3", "osprey")):
            conv = found[("feishu", chat)].id
            said = f"the {word} budget is 7M"
            await inbound.insert_many_if_new(
                tx,
                [inbound.NewEvent("feishu", message, "message", chat, {"text": said}, "ok", now)],
            )
            item = await inbox.append(
                tx,
                kind="user_message",
                payload={"text": said, "addressed_text": said, "sender_id": "ou_a"},
                conversation_id=conv,
                dedupe_key=f"feishu:{message}",
                created_at=now,
            )
            assert item is not None
            turn = f"{TURN}-{chat}"
            await tx.execute(
                update(InboxItem)
                .where(InboxItem.id == item)
                .values(delivered_at=now, batch_id=turn)
            )
            coordination = (await sessions.new_coordinations(tx, [(conv, chat)], now))[conv]
            shown = f"[m1] ou_a: {said}"
            await sessions.append_events(
                tx,
                coordination,
                [
                    ("user", shown, {"inbox_items": [item], "spans": {str(item): [0, len(shown)]}}),
                    ("assistant", f"{word} budget noted", None),
                    ("summary", f"they spoke of the {word} budget", {"covered_seq": 2}),
                ],
                now,
            )
            for n, state in enumerate(("sent", "pending")):
                tx.add(
                    OutboxMessage(
                        idempotency_key=reply_key(turn, n),
                        conversation_id=conv,
                        platform="feishu",
                        chat_id=chat,
                        content_type="text",
                        content={"text": f"{word} budget noted ({n})"},
                        state=state,
                    )
                )
            task = Session(name=f"{word} task", role="task", conversation_id=conv, labels=[])
            tx.add(task)
            await tx.flush()
            tx.add(
                SessionSummary(
                    session_id=task.id,
                    text=f"the {word} task",
                    covered_seq=0,
                    completion_count=2,
                    requested_at_count=2,
                    summarized_at_count=2,
                    generated_at=now,
                )
            )
            finding = await discovery_repo.add_finding(
                tx,
                Finding(
                    round_id=round_id,
                    ordinal=len(seen) + 1,
                    text=f"the {word} budget doubled",
                    refs=[f"rec-{seqs[message]}"],
                    status=discovery_repo.QUEUED,
                    created_at=now,
                ),
            )
            await inbox.append(
                tx,
                kind="finding",
                payload={"text": f"F-{finding.id}: the {word} budget", "finding": finding.id},
                conversation_id=conv,
                dedupe_key=discovery_repo.finding_item_key(finding.id),
                created_at=now,
            )
            seen[chat] = {"task": task.id, "finding": finding.id, "turn": turn}
    return seen


async def test_forgetting_a_chat_leaves_no_word_in_events_items_replies_summaries_findings(
    db: Database,
) -> None:
    seen = await seed_team(db)
    assert await rows_saying(db, "falcon")
    progress = await forget(db, ["chat", "oc_team"])

    assert await rows_saying(db, "falcon") == []
    assert await rows_saying(db, "osprey")  # the other chat keeps every word
    assert progress.removed["logs_redacted"] == 1
    assert progress.removed["answers_redacted"] == 3  # the log's answer, both replies
    assert progress.removed["summaries_dropped"] == 2  # the history's, the task's
    assert progress.removed["findings_withdrawn"] == 1
    assert progress.removed["payloads_blanked"] == 3  # the event, the item, the finding's item
    team = seen["oc_team"]
    async with db.write() as tx:
        # The event's row stays: the same message delivered again is a duplicate.
        again = inbound.NewEvent("feishu", "m1", "message", "oc_team", {}, "ok", utcnow())
        assert await inbound.insert_many_if_new(tx, [again]) == set()
        item = await tx.scalar(select(InboxItem).where(InboxItem.dedupe_key == "feishu:m1"))
        assert item is not None and item.payload == {"sender_id": "ou_a", "forgotten": True}
        states = dict(
            (
                await tx.execute(
                    select(OutboxMessage.idempotency_key, OutboxMessage.state).where(
                        OutboxMessage.conversation_id == item.conversation_id
                    )
                )
            ).all()
        )
        assert states == {reply_key(team["turn"], 0): "sent", reply_key(team["turn"], 1): "failed"}
        summary = await tx.get(SessionSummary, team["task"])
        assert summary is not None and summary.text is None and summary.covered_seq == 0
        assert summary.requested_at_count > summary.summarized_at_count  # written again
        finding = await tx.get(Finding, team["finding"])
        assert finding is not None and finding.status == "unsent" and finding.refs == []
        told = await tx.scalar(
            select(InboxItem).where(
                InboxItem.dedupe_key == discovery_repo.finding_item_key(team["finding"])
            )
        )
        assert told is not None and told.batch_id == RECALLED  # never told now
        other = await tx.get(Finding, seen["oc_other"]["finding"])
        assert other is not None and other.status == "queued"

"""A finding's delivery and feedback as they happen in the running service (webhook, the
real sender against the Feishu stand-in, scripted model; both databases): queued while its
message waits, delivered once Feishu has it; the owner's reply to that message and a
reaction on it are its feedback, an unrelated DM message is not; a reaction starts no turn
and a redelivered one is stored once."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from bot.channels.ingest import INBOX_TOPIC
from bot.discovery.delivery import collect_feedback, settle_deliveries
from bot.llm.scripted import PlannedReply, ScriptedProvider
from bot.llm.types import Message
from storage.models import Finding, FindingFeedback, InboxItem, MessageReaction, Session
from storage.repos import conversations, inbox
from storage.repos import discovery as repo
from storage.types import utcnow
from tests.assistant.support import bot_world, quiet, replies, say
from tests.assistant.support import sleep as sleep_step
from tests.feishu_world import OWNER, FeishuWorld, WorldFactory
from tests.matters.routed_model import RoutedModel
from tests.waiting import wait_until

send = ScriptedProvider.tool_call
HEADS_UP = "Heads-up: Li promised you the budget report by Friday."


async def queue_a_finding(w: FeishuWorld) -> int:
    """A finding as Judgement leaves it: stored and queued in the owner's Bot inbox."""
    db, now = w.app.services.db, utcnow()
    async with db.write() as s:
        dm = await conversations.find_dm(s, "feishu", OWNER)
        assert dm is not None
        round_ = await repo.open_round(s, "asked for with /discovery run", {}, now)
        round_.phase, round_.findings, round_.finished_at = "done", 1, now
        finding = await repo.add_finding(
            s, Finding(round_id=round_.id, ordinal=1, text="Li promised the budget report",
                       refs=["rec-1"], status=repo.QUEUED, created_at=now),
        )  # fmt: skip
        await inbox.append(
            s, kind="finding", payload={"text": f"F-{finding.id}: Li promised", "finding":
                                        finding.id},
            conversation_id=dm.id, dedupe_key=repo.finding_item_key(finding.id), created_at=now,
        )  # fmt: skip
    await w.app.services.notifier.notify(INBOX_TOPIC)
    return finding.id


async def finding(w: FeishuWorld, finding_id: int) -> Finding:
    async with w.app.services.db.read() as s:
        row = await s.get(Finding, finding_id)
    assert row is not None
    return row


def reaction(
    w: FeishuWorld, message_id: str, event_id: str, emoji: str = "THUMBSUP"
) -> dict[str, Any]:
    """`im.message.reaction.created_v1` as Feishu pushes it (schema 2.0)."""
    return w.events.event_of_type(
        "im.message.reaction.created_v1",
        {
            "message_id": message_id,
            "reaction_type": {"emoji_type": emoji},
            "operator_type": "user",
            "user_id": {"open_id": OWNER, "union_id": "on_owner", "user_id": "owner"},
            "app_id": w.events.app_id,
            "action_time": str(int(utcnow().timestamp() * 1000)),
        },
        event_id=event_id,
    )


async def test_a_finding_is_delivered_when_sent_and_replies_and_reactions_to_it_are_feedback(
    make_world: WorldFactory,
) -> None:
    model = ScriptedProvider(
        [send("send_user", {"text": "Hello."}), sleep_step,
         send("send_user", {"text": HEADS_UP}), sleep_step,
         send("send_user", {"text": "No idea."}), sleep_step,
         send("send_user", {"text": "Noted."}), sleep_step]
    )  # fmt: skip
    async with bot_world(make_world, model) as w:
        db = w.app.services.db
        await say(w, "hi")
        await replies(w, 1)
        release, arrived = w.fake.hold_next("/open-apis/im/v1/messages", method="POST")
        finding_id = await queue_a_finding(w)
        await wait_until(arrived.wait, what="the heads-up at Feishu, held")

        async def turn_over() -> bool:
            async with db.read() as s:
                item = await s.scalar(
                    select(InboxItem).where(InboxItem.dedupe_key == f"finding:{finding_id}")
                )
            return item is not None and item.delivered_at is not None

        await wait_until(turn_over, what="the Bot's turn over the finding ended")
        assert await settle_deliveries(db) == 0
        assert (await finding(w, finding_id)).status == "queued"  # its message waits

        release.set()
        await replies(w, 2)
        sent = w.fake.sent[1]  # a card: the finding's buttons under the heads-up
        assert sent.msg_type == "interactive"
        assert sent.body["body"]["elements"][0]["content"].startswith(HEADS_UP)
        assert await settle_deliveries(db) == 1
        told = await finding(w, finding_id)
        assert told.status == "delivered" and told.message_id == sent.message_id
        assert told.delivered_at is not None

        await say(w, "what's for lunch?")  # not about the finding
        await replies(w, 3)
        await say(w, "I knew that already", parent_id=sent.message_id, root_id=sent.message_id)
        await replies(w, 4)
        for _ in range(2):  # Feishu delivers an un-acked event again: stored once
            status, body = await w.events.post(reaction(w, sent.message_id, "ev_reaction_1"))
            assert status == 200, body
        inbox_before = await w.count(InboxItem)
        await quiet(w)
        assert len(w.fake.sent) == 4 and await w.count(InboxItem) == inbox_before  # no turn
        assert await w.count(MessageReaction) == 1

        assert await collect_feedback(db, OWNER, ("feishu",), utcnow()) == 2
        assert await collect_feedback(db, OWNER, ("feishu",), utcnow()) == 0  # once
        async with db.read() as s:
            feedback = (await s.scalars(select(FindingFeedback).order_by("id"))).all()
            total = await s.scalar(select(func.count(FindingFeedback.id)))
        assert total == 2
        assert [(f.finding_id, f.kind, f.text) for f in feedback] == [
            (finding_id, "reply", "I knew that already"),
            (finding_id, "reaction", "THUMBSUP"),
        ]


async def test_the_findings_message_has_buttons_and_the_owners_not_useful_is_its_feedback(
    make_world: WorldFactory,
) -> None:
    model = ScriptedProvider([send("send_user", {"text": HEADS_UP}), sleep_step])
    async with bot_world(make_world, model) as w:
        await say(w, "/whoami")  # the owner's DM, as ingest makes it
        await replies(w, 1)
        finding_id = await queue_a_finding(w)
        await replies(w, 2)
        card = w.fake.sent[1]
        [buttons] = [e for e in card.body["body"]["elements"] if e["tag"] == "column_set"]
        values = {
            c["elements"][0]["text"]["content"]: c["elements"][0]["behaviors"][0]["value"]
            for c in buttons["columns"]
        }
        not_useful = {"finding": str(finding_id), "verdict": "not_useful"}
        assert values == {
            "Track as a task": {"finding": str(finding_id), "verdict": "track"},
            "Not useful": not_useful,
        }

        def click(by: str) -> dict[str, Any]:
            return w.events.card_action_event(
                value=not_useful, open_message_id=card.message_id, open_chat_id=card.chat_id,
                operator_open_id=by,
            )  # fmt: skip

        for by in ("ou_someone_else", OWNER):
            status, body = await w.events.post(click(by))
            assert status == 200, body
        await replies(w, 4)
        await quiet(w)
        said = [m.text for m in w.fake.sent[2:]]
        assert said == [
            "Only the owner's verdict on a finding counts; nothing was recorded.",
            f"Noted: finding #{finding_id} was not useful.",
        ]
        async with w.app.services.db.read() as s:
            feedback = (await s.scalars(select(FindingFeedback))).all()
        assert [(f.finding_id, f.kind, f.text) for f in feedback] == [
            (finding_id, "button", "not_useful")
        ]
        # the owner's verdict closes the card (the other click changed nothing)
        [closed] = w.fake.patched
        assert closed.message_id == card.message_id
        assert not [e for e in closed.body["body"]["elements"] if e["tag"] == "column_set"]
        assert closed.body["body"]["elements"][-1]["content"].startswith(
            f"Marked not useful by {OWNER} at "
        )


async def test_the_owners_track_click_records_the_verdict_and_starts_a_task(
    make_world: WorldFactory,
) -> None:
    model = RoutedModel()
    asked: list[str] = []
    created: list[str] = []

    def create_it(messages: list[Message]) -> PlannedReply:
        asked.append(messages[-1].content or "")
        return send("tasks_create", {"title": "budget report from Li", "text": "follow up"})

    def confirm(messages: list[Message]) -> PlannedReply:
        created.append(messages[-1].content or "")
        return send("send_user", {"text": "Tracking it."})

    async with bot_world(make_world, model) as w:  # type: ignore[arg-type]
        await say(w, "/whoami")
        await replies(w, 1)
        model.add("bot", send("send_user", {"text": HEADS_UP}), sleep_step)
        finding_id = await queue_a_finding(w)
        await replies(w, 2)
        card = w.fake.sent[1]
        model.add("bot", create_it, confirm, sleep_step)
        track = {"finding": str(finding_id), "verdict": "track"}
        click = w.events.card_action_event(
            value=track, open_message_id=card.message_id, open_chat_id=card.chat_id,
            operator_open_id=OWNER,
        )  # fmt: skip
        assert (await w.events.post(click))[0] == 200
        assert (await replies(w, 3))[2] == "Tracking it."
        async with w.app.services.db.read() as s:
            feedback = (await s.scalars(select(FindingFeedback))).all()
            task = await s.scalar(select(Session).where(Session.name == "budget report from Li"))
    assert (
        f"[clicked 'Track as a task' under the finding]: new task: track finding #{finding_id}"
        in (asked[0])
    )
    assert "created task 'budget report from Li'" in created[0], created
    assert task is not None
    assert [(f.finding_id, f.kind, f.text) for f in feedback] == [(finding_id, "button", "track")]

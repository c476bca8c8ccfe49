"""Recall runs in the service: tasks_candidates carries its proposal for the user's words,
the Bot's model decides, and the gate refuses a new task nobody asked for."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from bot.llm.types import Message
from storage.models import InboxItem, Session
from storage.types import utcnow
from tests.assistant.support import all_delivered, bot_world, replies, say, send
from tests.assistant.support import sleep as sleep_step
from tests.feishu_world import FeishuWorld, WorldFactory
from tests.matters.routed_model import RoutedModel
from tests.seed import owner_dm, task_session

TASKS = ("Redis timeout on staging", "Billing export to CSV", "Billing export to PDF")


def _tool_result(messages: list[Message]) -> str:
    """The last tool result, without the quoting frame the Bot puts around data."""
    framed = messages[-1].content or ""
    return framed.split("\n", 1)[1].rsplit("\n", 1)[0]


def follow_recall(messages: list[Message]) -> Any:
    """A model that does what Recall proposes: delegate, ask, or create."""
    listing = json.loads(_tool_result(messages))
    recall = listing["recall"]
    if recall["proposal"] == "existing":
        return send(
            "tasks_delegate",
            {
                "candidate_set_id": listing["candidate_set_id"],
                "candidate_ref": recall["ref"],
                "text": "a follow-up",
            },
        )
    if recall["proposal"] == "new":
        return send("tasks_create", {"title": "Quarterly report", "text": "new work"})
    return send("send_user", {"text": f"Which task do you mean? ({recall['reason']})"})


def tell(text: str) -> Any:
    def step(messages: list[Message]) -> Any:
        return send("send_user", {"text": f"{text}: {_tool_result(messages)}"})

    return step


async def _seed(w: FeishuWorld) -> dict[str, int]:
    now = utcnow()
    async with w.app.services.db.write() as s:
        conv = await owner_dm(s)
        return {
            name: (
                await task_session(
                    s,
                    conv,
                    name,
                    created_at=now - timedelta(days=1),
                    last_message_at=now - timedelta(minutes=10 * (i + 1)),
                )
            ).id
            for i, name in enumerate(TASKS)
        }


async def _delegations(w: FeishuWorld) -> list[InboxItem]:
    async with w.app.services.db.read() as s:
        return list(
            (
                await s.scalars(
                    select(InboxItem)
                    .where(InboxItem.session_id.is_not(None))
                    .order_by(InboxItem.id)
                )
            ).all()
        )


async def test_the_bot_delegates_asks_creates_and_is_refused_as_recall_and_the_gate_say(
    make_world: WorldFactory,
) -> None:
    candidates = send("tasks_candidates", {})
    # Routed by role: the delegated and created tasks' own agents wait, unscripted.
    model = RoutedModel()
    model.add(
        "bot",
        *[
            # 1. a request for an existing task: delegated there
            candidates, follow_recall, tell("done"), sleep_step,
            # 2. an ambiguous one: the Bot asks
            candidates, follow_recall, sleep_step,
            # 3. "start a new task for X": created
            candidates, follow_recall, tell("created"), sleep_step,
            # 4. a tasks_create nobody asked for: the gate refuses
            send("tasks_create", {"title": "Quarterly report", "text": "guessing"}),
            tell("refused"), sleep_step,
        ],
    )  # fmt: skip
    async with bot_world(make_world, model) as w:  # type: ignore[arg-type]
        ids = await _seed(w)
        await say(w, "any news on the Redis timeout?")
        await replies(w, 1)
        await say(w, "how is the billing export going?")
        await replies(w, 2)
        await say(w, "start a new task for the quarterly report")
        await replies(w, 3)
        await say(w, "can you look at the budget numbers")
        sent = await replies(w, 4)
        await all_delivered(w)
        delegated = await _delegations(w)
        async with w.app.services.db.read() as s:
            names = set((await s.scalars(select(Session.name).where(Session.role.is_(None)))).all())

    assert sent[0].startswith("done: delegated")
    assert sent[1].startswith("Which task do you mean? (two candidates fit about equally)")
    assert sent[2].startswith("created: created task 'Quarterly report'")
    assert "new_task_not_requested" in sent[3]
    # one delegation to the Redis task, one creation; the refused create wrote nothing
    assert [(d.payload["action"], d.payload["request"]) for d in delegated] == [
        ("delegate", "any news on the Redis timeout?"),
        ("create", "start a new task for the quarterly report"),
    ]
    assert delegated[0].session_id == ids["Redis timeout on staging"]
    assert names == {*TASKS, "Quarterly report"}


async def test_a_new_task_is_refused_when_the_words_name_an_existing_one(
    make_world: WorldFactory,
) -> None:
    model = RoutedModel()
    model.add(
        "bot",
        send("tasks_create", {"title": "Redis again", "text": "new"}),
        tell("refused"),
        sleep_step,
    )
    async with bot_world(make_world, model) as w:  # type: ignore[arg-type]
        await _seed(w)
        await say(w, "start a new task for the redis timeout on staging")
        [answer] = await replies(w, 1)
    assert "request_names_a_task" in answer and "Redis timeout on staging" in answer

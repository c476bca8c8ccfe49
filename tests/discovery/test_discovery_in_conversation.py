"""Discovery as the owner meets it in the running service (webhook, Feishu stand-in,
scripted model): turned on with /discovery, a round finds a promise in a group's history, the
Bot (and only the Bot) tells the owner and offers a task, a plain "yes" starts it, and
/discovery status reports the round, tokens and counts."""

from __future__ import annotations

import re

from sqlalchemy import select

from bot.llm.scripted import PlannedReply
from bot.llm.types import Message
from storage.models import Finding, Session
from storage.search import SearchFilters
from tests.assistant.support import answers_sent, bot_world, replies, say, say_in_group
from tests.assistant.support import sleep as sleep_step
from tests.feishu_world import WorldFactory
from tests.matters.routed_model import RoutedModel, send
from tests.waiting import wait_until

REC = re.compile(r"\[(rec-\d+)\]")
PROMISE = "I will send the budget report by Friday"


def note_the_promise(messages: list[Message]) -> PlannedReply:
    found = next(m.content or "" for m in reversed(messages) if m.name == "memory_search")
    refs = REC.findall(found)
    assert refs, found
    return send("note_append", {"kind": "situation", "text": "Li promised the budget report "
                                "by Friday", "refs": refs[:1]})  # fmt: skip


def judge_it_worth_telling(messages: list[Message]) -> PlannedReply:
    notebook = messages[1].content or ""
    ref = re.search(r"\[(rec-\d+)\]", notebook)
    assert ref, notebook
    return send("finding_emit", {"text": "Li promised you the budget report by Friday",
                                 "refs": [ref.group(1)]})  # fmt: skip


async def test_a_finding_reaches_the_owner_through_the_bot_and_a_yes_starts_a_task(
    make_world: WorldFactory,
) -> None:
    model = RoutedModel()
    bot_saw: list[str] = []

    def tell_the_owner(messages: list[Message]) -> PlannedReply:
        bot_saw.append(messages[-1].content or "")
        return send("send_user", {"text": "Heads-up: Li promised you the budget report by "
                                  "Friday. Want me to track it as a task?"})  # fmt: skip

    async with bot_world(make_world, model) as w:  # type: ignore[arg-type]
        db = w.app.services.db
        await say_in_group(w, "hello", sender="ou_li")  # wakes the Bot in the group
        model.add("bot", sleep_step)
        await w.events.post(
            w.message(PROMISE, chat_id="oc_group", chat_type="group", sender_open_id="ou_li")
        )  # fmt: skip  (history only)

        async def promise_indexed() -> bool:  # discovery's search must find it: not a race
            only_messages = SearchFilters(kinds=["source_message"])
            return bool(await w.app.services.search.search("budget report", only_messages))

        await wait_until(promise_indexed, what="the promise in the search index")
        model.add(
            "discovery",
            send("memory_search", {"query": "budget report"}),
            note_the_promise,
            send("pass_end", {}),
        )
        model.add("judgement", judge_it_worth_telling, send("pass_end", {}))
        model.add("bot", tell_the_owner, sleep_step)
        await say(w, "/discovery on")

        async def sent_to_owner(n: int) -> bool:
            return len([m for m in answers_sent(w) if m.chat_id == "oc_owner_dm"]) >= n

        await wait_until(lambda: sent_to_owner(2), what="'/discovery on' and the Bot's heads-up")
        owner_dm = [m.text or "" for m in answers_sent(w) if m.chat_id == "oc_owner_dm"]
        assert owner_dm[0] == "Discovery is on."
        assert owner_dm[1].startswith("Heads-up: Li promised you the budget report")
        assert "finding (From discovery, for the owner" in bot_saw[0]
        assert "Li promised you the budget report by Friday" in bot_saw[0]
        assert model.calls["discovery"] == 3 and model.calls["judgement"] == 2
        assert not [
            m for m in answers_sent(w) if m.chat_id == "oc_group" and "budget" in (m.text or "")
        ]

        # A plain yes to the offer starts the task (the gate accepts it: a finding was offered).
        created: list[str] = []

        def create_it(messages: list[Message]) -> PlannedReply:
            return send("tasks_create", {"title": "budget report from Li",
                                         "text": "follow up on Li's promise"})  # fmt: skip

        def confirm(messages: list[Message]) -> PlannedReply:
            created.append(messages[-1].content or "")
            return send("send_user", {"text": "Tracking it."})

        model.add("bot", create_it, confirm, sleep_step)
        model.add("agent", send("settle", {"expected_revision": 0, "disposition": "wait",
                                           "reason": "r", "summary": "s",
                                           "waiting_for": "Friday"}))  # fmt: skip
        await say(w, "yes, track it")
        await wait_until(lambda: sent_to_owner(3), what="the Bot's word that the task started")
        assert "created task 'budget report from Li'" in created[0], created
        async with db.read() as s:
            task = await s.scalar(select(Session).where(Session.name == "budget report from Li"))
        assert task is not None

        await say(w, "/discovery status")
        await wait_until(lambda: sent_to_owner(4), what="/discovery status")
        status = [m.text or "" for m in answers_sent(w) if m.chat_id == "oc_owner_dm"][3]
        assert status.startswith("Discovery: on, every 30 min")
        assert ", done (new: new messages or mail): 1 findings passed to the Bot" in status
        assert re.search(r"Tokens today: [1-9]\d* of 50000", status), status
        assert "Notebook: 1 notes. Findings: 1 delivered" in status
        assert "Li promised" not in status  # counts, never the notebook's words
        # Delivered as the heads-up: the message the Bot sent, with Feishu's id for it.
        heads_up = [m for m in answers_sent(w) if m.chat_id == "oc_owner_dm"][1]
        async with db.read() as s:
            [finding] = (await s.scalars(select(Finding))).all()
        assert finding.status == "delivered" and finding.message_id == heads_up.message_id


async def test_a_plain_yes_without_an_offer_starts_no_task(make_world: WorldFactory) -> None:
    model = RoutedModel()
    refused: list[str] = []

    def create_anyway(messages: list[Message]) -> PlannedReply:
        return send("tasks_create", {"title": "something", "text": "x"})

    def note_refusal(messages: list[Message]) -> PlannedReply:
        refused.append(messages[-1].content or "")
        return send("send_user", {"text": "Which task do you mean?"})

    async with bot_world(make_world, model) as w:  # type: ignore[arg-type]
        model.add("bot", create_anyway, note_refusal, sleep_step)
        await say(w, "yes")
        await replies(w, 1)
    assert "error: new_task_not_requested" in refused[0], refused


async def test_wrong_discovery_arguments_get_the_usage_and_change_nothing(
    make_world: WorldFactory,
) -> None:
    async with bot_world(make_world, RoutedModel()) as w:  # type: ignore[arg-type]
        for text in ("/discovery", "/discovery every 1m", "/discovery quiet 25-3",
                     "/discovery budget lots", "/discovery sometimes"):  # fmt: skip
            await say(w, text)
        await replies(w, 5)
        answers = [m.text or "" for m in answers_sent(w)]
        assert all(a.startswith("Usage: /discovery on | off") for a in answers), answers
        assert "at least 5 minutes" in answers[1]
        assert "two different hours from 0 to 23" in answers[2]
        assert "a whole number of tokens" in answers[3]
        await say(w, "/discovery status")
        await replies(w, 6)
        assert (answers_sent(w)[5].text or "").startswith("Discovery: off (/discovery on to start)")

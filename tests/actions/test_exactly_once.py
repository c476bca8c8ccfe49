"""Exactly once: a crash between the executor's call and its record runs the action again
with the same key, and the chat sees one message; a scheduled message is approved now and
sent at its time; an action that keeps failing is backed off and parked while the rest go
on; over the daily cap a request is refused in one line."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import select

from bot.actions.registry import propose, register_executor
from bot.actions.worker import ActionWorker
from bot.assistant.component import Assistant
from bot.config import Role
from bot.llm.scripted import ScriptedProvider
from bot.services import Services
from storage.models import Action, OutboxMessage
from storage.repos import actions as repo
from storage.repos import timers
from storage.types import utcnow
from tests.actions.support import GROUP, actions, click, settled, texts_in, the_approval_card
from tests.assistant.support import bot_world, quiet, say, send
from tests.assistant.support import sleep as sleep_step
from tests.feishu_world import OWNER, WorldFactory
from tests.security.test_action_approvals import HELLO, asks_to_send
from tests.seed import owner_dm
from tests.waiting import wait_until

FLAKY = "test_flaky"
flaky_calls: list[str] = []


async def _flaky(services: Services, action: Action, key: str) -> str:
    flaky_calls.append(key)
    raise ConnectionError("the platform is away")


register_executor(FLAKY, _flaky, describe=lambda params: "a thing that always fails")


async def test_a_crash_between_the_send_and_its_record_sends_one_message(
    make_world: WorldFactory,
) -> None:
    async with bot_world(make_world, ScriptedProvider(asks_to_send())) as w:
        services = w.app.services
        await say(w, "tell the team hello")
        await the_approval_card(w)
        crashed = ActionWorker(services, owner="crashed-host", lease=timedelta(milliseconds=300))
        async with services.db.write() as s:  # approved and claimed at once, by a doomed host
            assert await repo.decide(s, 1, to=repo.APPROVED, by=OWNER, now=utcnow())
            [row] = await repo.claim_due(
                s, owner=crashed.owner, now=utcnow(), limit=1, lease=crashed.lease
            )
        state, _ = await crashed.execute(row)  # the effect happens...
        assert state == repo.DONE  # ...and the process dies before recording it
        row = await settled(w, 1, repo.DONE)  # the running worker takes the row over
        await wait_until(lambda: _sent(w, 1), what="the message in the group")
        await quiet(w)
        assert row.attempts == 2  # run twice...
        assert texts_in(w, GROUP) == ["hello team"]  # ...seen once
        assert [m.uuid for m in w.fake.sent if m.chat_id == GROUP] == ["maka-action-1"]


async def _sent(w: Any, n: int) -> bool:
    return len(texts_in(w, GROUP)) >= n


async def test_a_scheduled_message_is_approved_now_and_sent_at_its_time(
    make_world: WorldFactory,
) -> None:
    at = utcnow() + timedelta(seconds=2)
    provider = ScriptedProvider(
        [send("schedule_message", {**HELLO, "at": at.isoformat()}), sleep_step]
    )
    async with bot_world(make_world, provider) as w:
        await say(w, "greet the team in two seconds")
        card = await the_approval_card(w)
        assert "at " in card.content
        await click(w, card, "Approve")
        row = await settled(w, 1, repo.DONE)
        assert row.result is not None and row.result.startswith("scheduled: to "), row.result
        async with w.app.services.db.read() as s:
            timer = await timers.get(s, "maka-action-1")
        assert timer is not None and timer.due_at == at
        await wait_until(lambda: _sent(w, 1), what="the scheduled message")
        await quiet(w)
        assert texts_in(w, GROUP) == ["hello team"]
        async with w.app.services.db.read() as s:
            queued = await s.scalar(
                select(OutboxMessage).where(OutboxMessage.idempotency_key == "maka-action-1")
            )
        assert queued is not None and queued.created_at >= at  # queued at its time, not before


async def test_an_action_that_keeps_failing_is_parked_and_the_others_go_on(
    make_world: WorldFactory,
) -> None:
    flaky_calls.clear()
    async with make_world(role=Role.WEB, bot=Assistant(), model_provider=None) as w:
        services = w.app.services
        async with services.db.write() as s:
            dm = await owner_dm(s)
            for kind in (FLAKY, "send_message"):
                await repo.allow(s, kind=kind, conversation_id=None, by=OWNER, now=utcnow())
        flaky = await propose(
            services, kind=FLAKY, params={}, requester=OWNER, conversation=dm, reason="test"
        )
        fine = await propose(
            services,
            kind="send_message",
            params={"platform": "feishu", "to": GROUP, "to_name": "team", "text": "hi"},
            requester=OWNER,
            conversation=dm,
            reason="test",
        )
        assert (flaky.outcome, fine.outcome) == ("running", "running")
        worker = ActionWorker(services, owner="test-worker", max_attempts=3, retry_first=0.0)
        for _ in range(5):  # each run takes what is due; a failed try is due again at once
            await worker.run_once()
        parked, sent = await actions(w)
        assert parked.state == repo.FAILED
        assert parked.last_error == "gave up after 3 tries: ConnectionError: the platform is away"
        assert flaky_calls == ["maka-action-1"] * 3  # the same key every time
        assert sent.state == repo.DONE and sent.result and sent.result.startswith("sent to team")


async def test_over_the_daily_cap_a_request_is_refused_in_one_line(
    make_world: WorldFactory,
) -> None:
    async with make_world(
        role=Role.WEB, bot=Assistant(), model_provider=None, action_daily_cap=1
    ) as w:
        services = w.app.services
        async with services.db.write() as s:
            dm = await owner_dm(s)
        params = {"platform": "feishu", "to": GROUP, "to_name": "team", "text": "hi"}
        said = []
        for _ in range(2):
            proposed = await propose(
                services, kind="send_message", params=params, requester=OWNER,
                conversation=dm, reason="twice",
            )  # fmt: skip
            said.append((proposed.outcome, proposed.line))
        assert said[0][0] == "waiting"
        assert said[1] == (
            "refused",
            "refused: today's cap of 1 send_message actions is reached (MAKA_ACTION_DAILY_CAP)",
        )
        assert len(await actions(w)) == 1


async def test_a_turn_run_again_proposes_nothing_twice(make_world: WorldFactory) -> None:
    async with make_world(role=Role.WEB, bot=Assistant(), model_provider=None) as w:
        services = w.app.services
        async with services.db.write() as s:
            dm = await owner_dm(s)
        params = {"platform": "feishu", "to": GROUP, "to_name": "team", "text": "hi"}
        said = []
        for _ in range(2):
            proposed = await propose(
                services, kind="send_message", params=params, requester=OWNER,
                conversation=dm, reason="once", request_key="turn-7:send_message:1",
            )  # fmt: skip
            said.append(proposed)
        assert [p.outcome for p in said] == ["waiting", "waiting"]
        assert said[1].line == (
            "action #1 was proposed before and is proposed: send a message as the bot to team: “hi”"
        )
        assert len(await actions(w)) == 1
        async with services.db.read() as s:
            cards = await s.scalars(
                select(OutboxMessage.idempotency_key).where(OutboxMessage.content_type == "card")
            )
            assert list(cards) == ["action-card-1"]  # one card for the owner

"""The Bot's turns: batches, sleep, silence, crashes, failures, long conversations."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import func, select, update

from bot.assistant.component import Assistant
from bot.assistant.history import OMITTED
from bot.assistant.turn import MODEL_FAILED_REPLY, NO_TOOLS_REPLY
from bot.llm.scripted import ScriptedProvider, Step
from bot.llm.tokens import estimate_tokens
from bot.llm.types import Message, ModelUnavailable, ToolSpec
from storage.models import InboxItem, Lease, OutboxMessage, SessionEvent
from storage.types import utcnow
from tests.apps import RunningApp, make_settings, running_app
from tests.assistant.support import (
    all_delivered,
    bot_world,
    last_user_text,
    quiet,
    replies,
    say,
    send,
)
from tests.assistant.support import sleep as sleep_step
from tests.feishu_world import WorldFactory
from tests.waiting import wait_until


async def test_three_messages_sent_while_a_turn_runs_reach_the_next_turn_as_one_batch(
    make_world: WorldFactory,
) -> None:
    release = asyncio.Event()

    async def slow_first_answer(_m: list[Message], _t: list[ToolSpec]) -> object:
        await release.wait()
        return send("send_user", {"text": "first answer"})

    provider = ScriptedProvider(
        [
            slow_first_answer,
            ScriptedProvider.text("done"),  # ends the turn without sleep: the next batch is new
            send("send_user", {"text": "answer to the three"}),
            sleep_step,
        ]
    )
    async with bot_world(make_world, provider) as w:
        await say(w, "first")
        await wait_until(lambda: _asked(provider), what="the first turn to reach the model")
        for text in ("second", "third", "fourth"):
            await say(w, text)
        release.set()
        assert await replies(w, 2) == ["first answer", "answer to the three"]
        await all_delivered(w)
    batch = last_user_text(provider.requests[2][0])
    assert all(word in batch for word in ("second", "third", "fourth"))
    assert "first" not in batch.replace("first answer", "")


async def test_sleep_while_input_waits_is_refused_and_handled_in_the_same_activation(
    make_world: WorldFactory,
) -> None:
    arrived = asyncio.Event()

    async def sleep_after_more_input(_m: list[Message], _t: list[ToolSpec]) -> object:
        await arrived.wait()
        return sleep_step

    def answer_new_input(messages: list[Message], _t: list[ToolSpec]) -> object:
        refusal = messages[-1].content or ""
        assert messages[-1].role == "tool" and "new input arrived" in refusal
        assert "also this" in refusal
        return send("send_user", {"text": "handled both"})

    provider = ScriptedProvider([sleep_after_more_input, answer_new_input, sleep_step])
    async with bot_world(make_world, provider) as w:
        await say(w, "hello")
        await wait_until(lambda: _asked(provider), what="the first turn to reach the model")
        await say(w, "also this")  # the webhook answers once the item is committed

        async def both_waiting() -> bool:
            return await w.inbox_items() == 2

        await wait_until(both_waiting, what="the second message in the inbox")
        arrived.set()
        assert await replies(w, 1) == ["handled both"]
        await all_delivered(w)
        async with w.app.services.db.read() as s:
            kinds = (await s.scalars(select(SessionEvent.kind).order_by(SessionEvent.seq))).all()
    assert list(kinds) == ["user", "assistant"]  # one turn, one activation
    provider.assert_exhausted()


async def test_input_claimed_by_the_last_step_of_a_turn_is_answered_by_the_next_turn(
    make_world: WorldFactory,
) -> None:
    """A turn that stops at its step limit (10) right after a tool claimed new input has not
    answered that input: it stays undelivered and the next turn answers it."""
    arrived = asyncio.Event()

    async def check_after_more_input(_m: list[Message], _t: list[ToolSpec]) -> object:
        await arrived.wait()
        return send("inbox_check", {})

    steps: list[Step] = [send("send_user", {"text": "got hello"})]
    steps += [send("inbox_check", {})] * 8 + [check_after_more_input]  # ten steps in all
    steps += [send("send_user", {"text": "got the late one"}), sleep_step]
    provider = ScriptedProvider(steps)
    async with bot_world(make_world, provider) as w:
        await say(w, "hello")
        await wait_until(lambda: _asked(provider, 10), what="the turn's last step")
        await say(w, "late one")
        arrived.set()
        assert await replies(w, 2) == ["got hello", "got the late one"]
        await all_delivered(w)
        async with w.app.services.db.read() as s:
            logged = (
                await s.scalars(
                    select(SessionEvent.text)
                    .where(SessionEvent.kind == "user")
                    .order_by(SessionEvent.seq)
                )
            ).all()
    assert len(provider.requests) == 12
    assert "late one" in last_user_text(provider.requests[10][0])  # the next turn's batch
    assert len(logged) == 2 and "late one" not in logged[0] and "late one" in logged[1]


async def test_a_command_sent_while_a_turn_runs_is_answered_as_a_command_and_never_by_the_model(
    make_world: WorldFactory,
) -> None:
    """Input claimed mid-turn (by inbox_check or a refused sleep) never includes a slash
    command: the next turn answers it without a model (it used to reach the model as plain
    text, marked handled, and was never run; found by the soak)."""
    arrived = asyncio.Event()

    async def check_once_the_command_waits(_m: list[Message], _t: list[ToolSpec]) -> object:
        await arrived.wait()
        return send("inbox_check", {})

    def answer_the_first(messages: list[Message], _t: list[ToolSpec]) -> object:
        assert messages[-1].role == "tool" and "no new input" in (messages[-1].content or "")
        return send("send_user", {"text": "first answered"})

    provider = ScriptedProvider([check_once_the_command_waits, answer_the_first, sleep_step])
    async with bot_world(make_world, provider) as w:
        await say(w, "first")
        await wait_until(lambda: _asked(provider), what="the first turn to reach the model")
        await say(w, "/whoami")

        async def both_waiting() -> bool:
            return await w.inbox_items() == 2

        await wait_until(both_waiting, what="the command in the inbox")
        arrived.set()
        sent = await replies(w, 2)
        await all_delivered(w)
    assert sent[0] == "first answered" and "owner" in sent[1].lower(), sent
    assert not any("/whoami" in (m.content or "") for r in provider.requests for m in r[0])
    provider.assert_exhausted()


async def test_model_text_without_send_user_reaches_no_chat(make_world: WorldFactory) -> None:
    """Its text is never shown; a turn that called no tool at all tells the user in one line
    that the model cannot call tools (bot/llm/tool_support.py), rather than staying silent."""
    provider = ScriptedProvider([ScriptedProvider.text("I think the answer is 42.")])
    async with bot_world(make_world, provider) as w:
        await say(w, "what is the answer?")
        await all_delivered(w)
        await quiet(w)
        assert [m.text for m in w.fake.sent] == [NO_TOOLS_REPLY.format(model=provider.name)]


async def test_crash_mid_turn_then_restart_gives_exactly_one_reply(
    make_world: WorldFactory,
) -> None:
    hang = asyncio.Event()

    async def never_returns(_m: list[Message], _t: list[ToolSpec]) -> object:
        await hang.wait()
        raise AssertionError("unreachable")

    first = ScriptedProvider([send("send_user", {"text": "the answer"}), never_returns])
    async with bot_world(make_world, first) as w:
        await say(w, "question")
        await wait_until(lambda: _asked(first, 2), what="the turn to hang in its second step")
        assert await replies(w, 1, mid_turn=True) == ["the answer"]
        host = w.app.services.host
        for state in host.status().values():  # the process dies mid-turn
            for task in state.tasks:
                task.cancel()

        async def no_release() -> None:
            return None

        host.release_claims = no_release  # type: ignore[method-assign]
    second = ScriptedProvider([send("send_user", {"text": "the answer, again"}), sleep_step])
    async with bot_world(make_world, second, name="restarted") as w2:
        async with w2.app.services.db.write() as s:  # time passes: the dead lease lapses
            await s.execute(update(Lease).values(expires_at=utcnow()))
        await w2.app.services.notifier.notify("inbox")
        await all_delivered(w2)
        await quiet(w2)
        assert [m.text for m in w2.fake.sent] == ["the answer"]
    assert "question" in last_user_text(second.requests[0][0])  # the batch was handled again


async def test_a_failing_model_gets_one_apology_and_the_next_input_works(
    make_world: WorldFactory,
) -> None:
    provider = ScriptedProvider(
        [
            ModelUnavailable("upstream down"),
            send("send_user", {"text": "back to normal"}),
            sleep_step,
        ]
    )
    async with bot_world(make_world, provider) as w:
        await say(w, "are you ok?")
        assert await replies(w, 1) == [MODEL_FAILED_REPLY]
        await say(w, "and now?")
        assert await replies(w, 2) == [MODEL_FAILED_REPLY, "back to normal"]
        async with w.app.services.db.read() as s:
            users = (
                await s.scalars(select(SessionEvent.text).where(SessionEvent.kind == "user"))
            ).all()
    assert any("are you ok?" in text for text in users)  # the failed input stays recorded


async def test_a_long_conversation_keeps_model_input_under_its_bound(
    tmp_path: Path, database_url: str
) -> None:
    """Through the console channel: the same ingest, inbox, Bot and outbox, without Feishu's
    5 messages per second per chat, which would make 200 replies take 40 s by themselves."""
    bound = 2000
    sizes: list[int] = []

    def answer(messages: list[Message], tools: list[ToolSpec]) -> object:
        sizes.append(
            sum(estimate_tokens(m.content or "") for m in messages)
            + estimate_tokens(str([t.parameters for t in tools]))
        )
        return send("send_user", {"text": "好的，" + "收到你的消息并已处理。" * 8})

    provider = ScriptedProvider([])
    turns = 100  # the window fills within ~15 turns and the summary reaches its cap by ~50
    for _ in range(turns):
        provider.add(answer, sleep_step)
    settings = make_settings(tmp_path, database_url, context_tokens=bound, bot_debounce=0.0)
    async with running_app(settings, bot=Assistant(), model_provider=provider) as app:
        for i in range(turns):
            text = f"第{i}条消息：请记录一下今天的进展 step {i} " + "细节" * 20
            async with app.http.post(f"{app.url}/console/api/messages", json={"text": text}) as r:
                assert r.status == 200, await r.text()
            await wait_until(lambda n=i + 1: _answered(app, n), what=f"turn {i} answered")
        async with app.services.db.read() as s:
            summaries = (
                await s.scalars(select(SessionEvent).where(SessionEvent.kind == "summary"))
            ).all()
    assert len(sizes) == turns
    assert max(sizes) <= bound, max(sizes)
    assert summaries, "older turns were folded into a rolling summary"
    assert summaries[-1].text.startswith(OMITTED), "the summary reached its own cap"
    assert f"第{turns - 1}条" in last_user_text(provider.requests[-2][0])


async def _answered(app: RunningApp, turns: int) -> bool:
    async with app.services.db.read() as s:
        pending = await s.scalar(
            select(func.count(InboxItem.id)).where(InboxItem.delivered_at.is_(None))
        )
        sent = await s.scalar(  # the replies, not the receipt reactions
            select(func.count(OutboxMessage.id)).where(
                OutboxMessage.content_type.not_in(("reaction", "unreaction"))
            )
        )
    return pending == 0 and sent == turns


async def _asked(provider: ScriptedProvider, n: int = 1) -> bool:
    return len(provider.requests) >= n

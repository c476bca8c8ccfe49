"""Threads in a group: a message in a thread is answered in that thread, and each thread (and
the chat outside any thread) is a context of its own: one thread's messages per batch, and
a history window of that thread's earlier turns alone."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from bot.llm.scripted import ScriptedProvider
from bot.llm.types import Message, ToolSpec
from tests.assistant.support import bot_world, quiet, say, send
from tests.fakes import Mention, SentMessage
from tests.feishu_world import OWNER, FeishuWorld, WorldFactory
from tests.waiting import wait_until

WORD = re.compile(r"\b(?:main|alpha|beta)-\d\b")


def words(text: str) -> list[str]:
    return WORD.findall(text)


class Model:
    """Each turn: answer with the words of its batch ("re main-1"), then end the turn. Every
    turn's first model input is kept: its past turns and its batch."""

    def __init__(self) -> None:
        self.turns: list[list[Message]] = []
        self.release = asyncio.Event()
        self.release.set()
        self.provider = ScriptedProvider([])

    def expect(self, turns: int) -> None:
        for _ in range(turns):
            self.provider.add(self._answer, ScriptedProvider.text("done"))

    async def _answer(self, messages: list[Message], _tools: list[ToolSpec]) -> object:
        self.turns.append(messages)
        await self.release.wait()
        return send("send_user", {"text": "re " + " ".join(words(messages[-1].content or ""))})

    async def asked(self, turns: int) -> bool:
        return len(self.turns) >= turns

    def batch(self, turn: int) -> list[str]:
        """The words of the messages in the turn's batch (not of what they quote: a thread's
        messages reply to its root, shown with them as quoted data)."""
        shown = self.turns[turn][-1].content or ""
        return words(re.sub(r"<data .*?</data>", "", shown, flags=re.S))

    def past(self, turn: int) -> list[str]:
        """The words of the earlier turns the model was shown (user and assistant alike)."""
        shown = self.turns[turn][1:-1]  # after the system prompt, before the batch
        return [w for m in shown for w in words(m.content or "")]


class Group:
    """The owner speaking to the bot in the group, in the chat or in a thread."""

    def __init__(self, world: FeishuWorld) -> None:
        self.world = world
        self.roots: dict[str, str] = {}  # thread -> its first message
        self.ids: dict[str, str] = {}  # text -> message_id

    async def post(self, text: str, thread: str | None = None) -> None:
        root = self.roots.get(thread) if thread else None
        event = await say(
            self.world,
            f"@_user_1 {text}",
            sender=OWNER,
            chat_id="oc_group",
            chat_type="group",
            mentions=[Mention(open_id="ou_bot", name="Maka")],
            thread_id=thread,
            root_id=root,
            parent_id=root,
        )
        self.ids[text] = event["event"]["message"]["message_id"]
        if thread and root is None:
            self.roots[thread] = self.ids[text]

    def replies(self) -> list[SentMessage]:
        return [m for m in self.world.fake.sent if m.msg_type == "text"]

    async def answered(self, n: int) -> None:
        async def enough() -> bool:
            return len(self.replies()) >= n

        await wait_until(enough, what=f"{n} replies at the Feishu fake")


async def test_threads_and_the_chat_are_answered_each_in_place_with_their_own_history(
    make_world: WorldFactory,
) -> None:
    model = Model()
    model.expect(7)
    async with bot_world(make_world, model.provider) as w:
        group = Group(w)
        # The first turn is held at the model while the chat and two threads all speak: the
        # next turns take one context each, oldest first.
        model.release.clear()
        await group.post("main-1")
        await wait_until(lambda: model.asked(1), what="the first turn at the model")
        await group.post("alpha-1", "omt_alpha")
        await group.post("beta-1", "omt_beta")
        await group.post("main-2")
        await group.post("alpha-2", "omt_alpha")
        model.release.set()
        await group.answered(4)
        # Then one at a time, interleaved.
        for n, (text, thread) in enumerate(
            (("beta-2", "omt_beta"), ("alpha-3", "omt_alpha"), ("main-3", None)), start=5
        ):
            await group.post(text, thread)
            await group.answered(n)
        await quiet(w)
        replies = {m.reply_to: (m.reply_in_thread, m.thread_id) for m in group.replies()}
        ids = group.ids

    assert [model.batch(t) for t in range(7)] == [
        ["main-1"],
        ["alpha-1", "alpha-2"],
        ["beta-1"],
        ["main-2"],
        ["beta-2"],
        ["alpha-3"],
        ["main-3"],
    ]
    # Each turn's history: its own context's earlier turns, nothing of the others'.
    assert model.past(1) == []  # the first in thread alpha
    assert model.past(3) == ["main-1", "main-1"]  # main-1 and "re main-1"
    assert model.past(4) == ["beta-1", "beta-1"]
    assert model.past(5) == ["alpha-1", "alpha-2", "alpha-1", "alpha-2"]
    assert model.past(6) == ["main-1", "main-1", "main-2", "main-2"]
    # Each reply answers the last message of its batch, in its thread (or in the chat).
    expected: dict[str, Any] = {
        "main-1": (False, None),
        "alpha-2": (True, "omt_alpha"),
        "beta-1": (True, "omt_beta"),
        "main-2": (False, None),
        "beta-2": (True, "omt_beta"),
        "alpha-3": (True, "omt_alpha"),
        "main-3": (False, None),
    }
    for text, (in_thread, thread) in expected.items():
        assert replies[ids[text]] == (in_thread, thread), text
    assert len(replies) == 7

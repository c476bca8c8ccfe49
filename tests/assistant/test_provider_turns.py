"""A Bot turn against every provider family's stand-in (tests/fakes/model_providers.py),
through the real model client built from MAKA_MODEL_* settings: the answer reaches Feishu
once, and the model's reasoning reaches no one and is not stored. SQLite only: the database
is not what this varies (the turns themselves run on both in test_turns.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from bot.assistant.progress import WRITING_STEP
from bot.assistant.turn import NO_TOOLS_REPLY, REFUSED_REPLY
from storage.models import SessionEvent
from tests import databases
from tests.assistant.support import all_delivered, bot_world, cards, replies, say
from tests.fakes.model_providers import FAMILIES, OLLAMA_NO_TOOLS, ProviderFamily
from tests.fakes.openai_server import FakeOpenAIServer
from tests.feishu_world import FeishuWorld, WorldFactory
from tests.waiting import wait_until

THOUGHT = "SECRET-REASONING: the owner said hello, so I greet back"


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    return databases.copy_sqlite(sqlite_template, tmp_path / "maka.db")


def model_settings(family: ProviderFamily, server: FakeOpenAIServer, stream: str) -> dict[str, str]:
    return {
        "model_base_url": server.base_url,
        "model_api_key": server.api_key,
        "model_name": family.model,
        "model_stream": stream,
    }


async def stored_texts(w: FeishuWorld) -> list[str]:
    async with w.app.services.db.read() as s:
        return list((await s.scalars(select(SessionEvent.text))).all())


def everything_sent(w: FeishuWorld) -> str:
    return "\n".join(f"{m.text or ''} {m.content}" for m in w.fake.sent)


@pytest.mark.parametrize("stream", ["off", "on"])
@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
async def test_a_turn_answers_once_and_its_reasoning_reaches_no_one(
    make_world: WorldFactory, family: ProviderFamily, stream: str
) -> None:
    async with family.serve() as server:
        family.reply(
            server,
            None,
            reasoning=THOUGHT,
            calls=[("send_user", {"text": f"Hello from {family.name}."})],
        )
        family.reply(server, None, reasoning=THOUGHT, calls=[("sleep", {})])
        async with bot_world(make_world, None, **model_settings(family, server, stream)) as w:
            await say(w, "hello")
            assert await replies(w, 1) == [f"Hello from {family.name}."]
            await all_delivered(w)
            stored = await stored_texts(w)
    assert "SECRET-REASONING" not in everything_sent(w)
    assert stored and not any("SECRET-REASONING" in text for text in stored)
    assert all(bool(b.get("stream")) == (stream == "on") for b in server.requests)
    assert server.pending_replies == 0


@pytest.mark.parametrize("family", FAMILIES[:2] + FAMILIES[3:7], ids=lambda f: f.name)
async def test_a_filtered_turn_gets_an_honest_apology(
    make_world: WorldFactory, family: ProviderFamily
) -> None:
    async with family.serve() as server:
        family.refuse(server)
        async with bot_world(make_world, None, **model_settings(family, server, "auto")) as w:
            await say(w, "something the filter dislikes")
            assert await replies(w, 1) == [REFUSED_REPLY]
            await all_delivered(w)


async def test_a_model_without_tools_is_named_to_the_user(make_world: WorldFactory) -> None:
    async with OLLAMA_NO_TOOLS.serve() as server:
        settings = model_settings(OLLAMA_NO_TOOLS, server, "auto")
        async with bot_world(make_world, None, **settings) as w:
            await say(w, "hello")
            assert await replies(w, 1) == [NO_TOOLS_REPLY.format(model="gemma2:2b")]


async def test_a_streamed_answer_after_a_search_says_the_model_is_writing(
    make_world: WorldFactory,
) -> None:
    family = FAMILIES[2]  # DeepSeek: reasoning streamed too, handed back on tool turns
    async with family.serve() as server:
        family.reply(server, None, calls=[("memory_search", {"query": "supplier contract"})])
        family.reply(server, None, calls=[("send_user", {"text": "found it"})])
        family.reply(server, None, calls=[("sleep", {})])
        async with bot_world(make_world, None, **model_settings(family, server, "on")) as w:
            await say(w, "what did we agree with the supplier?")
            assert await replies(w, 1) == ["found it"]
            await all_delivered(w)

            async def card_done() -> bool:
                return any(c.text.endswith("- done") for c in cards(w))

            await wait_until(card_done, what="the progress card marked done")
            [card] = cards(w)
    assert card.text == f"- searching memory\n- {WRITING_STEP}\n- done"


async def test_an_answer_at_once_streamed_still_shows_no_card(make_world: WorldFactory) -> None:
    family = FAMILIES[0]
    async with family.serve() as server:
        family.reply(server, None, calls=[("send_user", {"text": "pong"})])
        family.reply(server, None, calls=[("sleep", {})])
        async with bot_world(make_world, None, **model_settings(family, server, "on")) as w:
            await say(w, "ping")
            assert await replies(w, 1) == ["pong"]
            await all_delivered(w)
            assert cards(w) == []

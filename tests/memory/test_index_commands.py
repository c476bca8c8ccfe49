"""Memory indexes as the owner uses them: made with `/index create` in the DM, kept by the
indexing agent in the background (scripted), announced once ready, read by the Bot with
`memory_index_read`, shown and steered with `/index`, and listed by `maka index list`."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

from bot.llm.scripted import PlannedReply
from bot.llm.types import Message
from storage.models import MemoryIndex
from storage.repos import memory_indexes as repo
from tests.assistant.support import all_delivered, answers_sent, bot_world, say, send
from tests.assistant.support import sleep as sleep_step
from tests.fakes import SentMessage
from tests.feishu_world import WorldFactory
from tests.matters.routed_model import RoutedModel
from tests.waiting import wait_until

REC = re.compile(r"\[rec-(\d+)\]")


def indexing_agent(messages: list[Message]) -> PlannedReply:
    """Reads the range, writes one entry per batch from what it was shown, checkpoints."""
    tools = [m for m in messages if m.role == "tool"]
    last = tools[-1] if tools else None
    reads = [m.content or "" for m in tools if m.name == "records_read"]
    if last is None or last.name == "entry_write":
        if reads and ("last of this range" in reads[-1] or "nothing left" in reads[-1]):
            return send("checkpoint", {"complete": True})
        return send("records_read", {})
    if last.name == "records_read":
        refs = REC.findall(last.content or "")
        if not refs:
            return send("checkpoint", {"complete": True})
        return send(
            "entry_write",
            {"key": f"batch from rec-{refs[0]}", "text": "the launch moves to May",
             "refs": [f"rec-{r}" for r in refs]},
        )  # fmt: skip
    return send("checkpoint", {"complete": True})


async def test_the_owner_makes_an_index_it_is_kept_and_the_bot_reads_it(
    make_world: WorldFactory, tmp_path: Path
) -> None:
    model = RoutedModel()
    model.add("indexer", *([indexing_agent] * 12))
    index_read: list[str] = []

    def answer_from_the_index(messages: list[Message]) -> PlannedReply:
        out = next(m.content or "" for m in reversed(messages) if m.name == "memory_index_read")
        index_read.append(out)
        return send("send_user", {"text": "From your index: the launch moves to May."})

    async with bot_world(make_world, model) as w:  # type: ignore[arg-type]
        db = w.app.services.db
        model.add("bot", sleep_step)  # the first message needs nothing
        await say(w, "remember: the launch moves to May")
        await all_delivered(w)  # else the commands arrive mid-turn and the model sees them
        await say(w, "/index list")
        await say(w, "/index create decisions decisions and who made them")

        async def sent(n: int) -> bool:
            return len(answers_sent(w)) >= n

        await wait_until(lambda: sent(2), what="two command answers")
        texts = [m.text or m.content for m in answers_sent(w)]
        assert "No indexes yet" in texts[0] and "/index create people" in texts[0]
        assert "Index 'decisions' created over everything you can see" in texts[1]

        # The indexing agent organizes; the ready notice reaches the Bot, which tells the owner.
        model.add(
            "bot",
            send("send_user", {"text": "Your index 'decisions' is ready."}),
            sleep_step,
        )

        async def covered() -> bool:
            async with db.read() as s:
                row = await repo.by_name(s, "decisions")
            return row is not None and row.covered_cursor > 0 and row.range_end is None

        await wait_until(covered, what="the index to cover the DM's records")
        await wait_until(lambda: sent(3), what="the Bot's word that the index is ready")
        ready = answers_sent(w)[2].text or ""
        why = re.fullmatch(r"Your index 'decisions' is ready\.\n\(why: /why (\d+)\)", ready)
        assert why, ready  # said on its own: it says how to ask why

        model.add(
            "bot",
            send("memory_index_read", {"name": "decisions", "query": "launch"}),
            answer_from_the_index,
            sleep_step,
        )
        await say(w, "what did we decide about the launch?")
        await wait_until(lambda: sent(4), what="the answer from the index")
        assert "the launch moves to May" in index_read[0] and "rec-" in index_read[0]

        await say(w, "/index show decisions")
        await wait_until(lambda: sent(5), what="/index show")
        shown = answers_sent(w)[4].text or ""
        assert "Status: " in shown and "Entries: 1" in shown and "covered to rec-" in shown
        await say(w, "/index pause decisions")
        await say(w, "/index show nosuch")
        await wait_until(lambda: sent(7), what="/index pause and a show of no index")
        assert [m.text for m in answers_sent(w)[5:7]] == [
            "Index 'decisions': paused.",
            "No index named 'nosuch'.",
        ]
        async with db.read() as s:
            row = await repo.by_name(s, "decisions")
        assert isinstance(row, MemoryIndex) and row.paused
        await say(w, f"/why {why.group(1)}")
        await say(w, "/why 99999")
        await wait_until(lambda: sent(9), what="two answers to /why")
        # `/why` lists its causes: Markdown, so a card (its markdown element read here)
        explained, unknown = (_shown(m) for m in answers_sent(w)[7:9])
        assert explained.startswith("I wrote because of:\n- index_notice (")
        assert "The index 'decisions' is ready: 1 entries so far." in explained
        assert unknown == "No message 99999 of mine here."
        url = str(db.engine.url.render_as_string(hide_password=False))

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli.main", "index", "list",
        env={**os.environ, "MAKA_DATABASE_URL": url, "MAKA_DATA_DIR": str(tmp_path / "cli")},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert out.decode().startswith("- decisions: paused, covered to rec-"), out.decode()


def test_an_index_without_a_model_says_what_to_set() -> None:
    from datetime import UTC

    from bot.memory.indexes.commands import describe

    index = MemoryIndex(
        name="people", criteria="people and their projects", status="pending", paused=False,
        covered_cursor=0, interval_seconds=3600,
    )  # fmt: skip
    waiting = describe(index, 0, UTC, has_model=False)
    assert "Status: pending (no model is configured: set MAKA_MODEL_BASE_URL" in waiting
    assert "(not checked yet)" in describe(index, 0, UTC, has_model=True)


def _shown(message: SentMessage) -> str:
    """What a reply says: a text message's text, or a Markdown card's markdown."""
    if message.text is not None:
        return message.text
    return "".join(
        e["content"] for e in message.body["body"]["elements"] if e.get("tag") == "markdown"
    )

"""A long file is shown to the Bot in part, with the call that reads on; memory_search and
memory_original name it as an attachment, where it was sent and by whom."""

from __future__ import annotations

import re

from bot.llm.scripted import ScriptedProvider
from bot.llm.types import Message, ToolSpec
from tests.assistant.support import bot_world, replies, say, send
from tests.assistant.support import sleep as sleep_step
from tests.attachments.fixtures import fake, make_world, quick_retries  # noqa: F401
from tests.attachments.support import send_file, settled
from tests.feishu_world import WorldFactory
from tests.waiting import wait_until

WORD = "quokkaledger"
LONG = ("".join(f"line {n} of the minutes\n" for n in range(480)) + f"{WORD} closes it\n").encode()
MORE = re.compile(r"\((\d+) more characters: memory_original\('(rec-\d+)', offset=(\d+)\)\)")


def tool_result(messages: list[Message], name: str) -> str:
    return next(m.content or "" for m in reversed(messages) if m.role == "tool" and m.name == name)


async def test_a_long_file_is_shown_in_part_and_read_on_with_memory_original(
    make_world: WorldFactory,  # noqa: F811
) -> None:
    seen: dict[str, str] = {}

    def read_on(messages: list[Message], _t: list[ToolSpec]) -> object:
        user = next(m.content or "" for m in reversed(messages) if m.role == "user")
        found = MORE.search(user)
        assert found, user[-500:]
        seen["shown"] = user
        return send("memory_original", {"ref": found.group(2), "offset": int(found.group(3))})

    def answer(messages: list[Message], _t: list[ToolSpec]) -> object:
        seen["original"] = tool_result(messages, "memory_original")
        return send("send_user", {"text": "read to the end"})

    def found_it(messages: list[Message], _t: list[ToolSpec]) -> object:
        seen["search"] = tool_result(messages, "memory_search")
        return send("send_user", {"text": "found"})

    provider = ScriptedProvider(
        [
            read_on,
            answer,
            sleep_step,
            send("memory_search", {"query": WORD}),
            found_it,
            sleep_step,
        ]
    )
    async with bot_world(make_world, provider) as w:
        message_id = await send_file(w, "minutes.txt", LONG, key="file_v3_long")
        assert await replies(w, 1) == ["read to the end"]
        await settled(w, message_id)

        async def indexed() -> bool:
            hits = await w.app.services.search.search(WORD)
            return any(h.kind == "source_message" for h in hits)

        await wait_until(indexed, what="the file's record in the search index")
        await say(w, "where was the quokka thing?")
        assert await replies(w, 2) == ["read to the end", "found"]
    shown = seen["shown"]
    assert '<data source="attachment minutes.txt (' in shown and WORD not in shown
    assert len(shown.split("<data", 1)[1]) < 8600  # the batch's share, not the whole file
    header = seen["original"].splitlines()[1]  # under the tool output's <data> line
    assert header.startswith("rec-") and WORD in seen["original"]
    assert "attachment 'minutes.txt' (" in header and "from ou_owner" in header
    assert "attachment 'minutes.txt' (" in seen["search"] and "from ou_owner" in seen["search"]

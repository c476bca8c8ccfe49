"""What issue #40 promises, end to end through the Feishu fake with the real sandboxed reader:
a PDF's passage is found by the Bot's memory_search and by /search in the owner's DM and not
in a group; an image's printed Chinese and English words are searchable; ten hostile files
each end in one line and the next message is still answered."""

from __future__ import annotations

from typing import Any

import pytest

from bot.llm.scripted import ScriptedProvider
from bot.llm.types import Message
from storage.repos import attachments
from tests.assistant.support import answers_sent, bot_world, replies, say, say_in_group, send
from tests.assistant.support import sleep as sleep_step
from tests.attachments import files
from tests.attachments.fixtures import fake, make_world, quick_retries  # noqa: F401
from tests.attachments.hostile import HOSTILE
from tests.attachments.support import send_file, settled
from tests.fakes import HistoryMessage
from tests.feishu_world import FeishuWorld, WorldFactory
from tests.seed import OWNER
from tests.waiting import wait_until

WORD = "quokkaledger"
PASSAGE = f"The {WORD} clause lets either side end the contract with thirty days notice."


def _tool_result(messages: list[Message], name: str) -> str:
    return next(m.content or "" for m in reversed(messages) if m.role == "tool" and m.name == name)


async def _indexed(w: FeishuWorld, word: str) -> None:
    async def found() -> bool:
        hits = await w.app.services.search.search(word)
        return any(h.kind == "source_message" for h in hits)

    await wait_until(found, 30.0, what=f"{word!r} from an attachment in the search index")


async def test_a_pdfs_passage_is_found_by_memory_search_and_slash_search_in_the_owners_dm_only(
    make_world: WorldFactory,  # noqa: F811
) -> None:
    seen: dict[str, str] = {}

    def answer_from_the_search(messages: list[Message], _tools: object) -> object:
        seen["search"] = _tool_result(messages, "memory_search")
        return send("send_user", {"text": "It is the notice clause."})

    provider = ScriptedProvider(
        [
            send("send_user", {"text": "Got the contract."}),
            sleep_step,
            send("memory_search", {"query": WORD}),
            answer_from_the_search,
            sleep_step,
        ]
    )
    async with bot_world(make_world, provider, admins=["ou_member"]) as w:
        pdf = files.pdf("Service agreement", PASSAGE)
        message_id = await send_file(w, "contract.pdf", pdf, key="file_v3_contract")
        assert (await replies(w, 1))[0] == "Got the contract."
        row = await settled(w, message_id)
        await _indexed(w, WORD)
        await say(w, f"what does the {WORD} clause say?")
        await replies(w, 2)
        await say(w, f"/search {WORD}")
        owner_answer = (await replies(w, 3))[2]
        await say_in_group(w, f"/search {WORD}")
        group_answer = (await replies(w, 4))[3]
    assert row.state == attachments.DONE, row.error
    assert "attachment 'contract.pdf'" in seen["search"]
    assert WORD in seen["search"] and "thirty days" in seen["search"]
    assert "attachment 'contract.pdf'" in owner_answer and WORD in owner_answer
    assert "Nothing found" in group_answer and "contract.pdf" not in group_answer


async def _send_image(w: FeishuWorld, png: bytes, key: str) -> str:
    event = w.events.message_event(
        message_type="image", content={"image_key": key}, chat_id="oc_owner_dm", chat_type="p2p"
    )
    msg = event["event"]["message"]
    w.fake.add_history(
        "oc_owner_dm",
        [
            HistoryMessage(
                msg["message_id"],
                "oc_owner_dm",
                msg["content"],
                msg_type="image",
                create_time_ms=int(msg["create_time"]),
                sender_id=OWNER,
            )
        ],
    )
    w.fake.attach_resource(msg["message_id"], key, png, kind="image", content_type="image/png")
    status, body = await w.events.post(event)
    assert status == 200, body
    return str(msg["message_id"])


@pytest.mark.usefixtures("ocr")
async def test_an_image_of_printed_chinese_and_english_text_is_searchable(
    make_world: WorldFactory,  # noqa: F811
) -> None:
    font = files.cjk_font()
    if font is None:
        pytest.skip("no font with Chinese glyphs (apt-get install fonts-wqy-zenhei)")
    png = files.text_image([("Invoice PELICAN 2026", None), ("报销审批流程", font)])
    async with make_world() as w:
        message_id = await _send_image(w, png, "img_v3_scan")
        row = await settled(w, message_id, timeout=60.0)
        assert row.state == attachments.DONE, row.error
        await _indexed(w, "PELICAN")
        chinese = await w.app.services.search.search("审批")
    assert any(h.kind == "source_message" for h in chinese)


async def test_ten_hostile_files_each_end_in_one_line_and_the_next_message_is_answered(
    make_world: WorldFactory,  # noqa: F811
) -> None:
    async with bot_world(make_world, None) as w:  # no model: a file gets the how-to line
        sent = [
            (h, await send_file(w, h.name, h.make(), key=f"file_v3_hostile_{n}"))
            for n, h in enumerate(HOSTILE)
        ]
        rows = [(h, await settled(w, message_id, timeout=120.0)) for h, message_id in sent]
        await say(w, "/help")
        answer = await _help_answer(w)
    lines: dict[str, Any] = {h.label: (row.state, row.error) for h, row in rows}
    for hostile, row in rows:
        if row.state == attachments.DONE:  # the spreadsheet whose declared size is a lie
            assert hostile.name == "sheet.xlsx", lines
            continue
        assert row.state == attachments.FAILED, lines
        assert row.error is not None and row.error.startswith("could not read: "), lines
        assert "\n" not in row.error and hostile.expect in row.error, lines
    assert "/help" in answer or "/status" in answer


async def _help_answer(w: FeishuWorld) -> str:
    async def answered() -> bool:
        return any("/status" in (m.text or m.content) for m in answers_sent(w))

    await wait_until(answered, 60.0, what="the answer to /help after the hostile files")
    return next(m.text or m.content for m in answers_sent(w) if "/status" in (m.text or m.content))

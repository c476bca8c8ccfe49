"""Replies with Markdown structure go out as cards (issue #39 item 2): a table is one card
that holds it; a 40 KB reply, Markdown or plain, arrives whole in several messages, in order;
and the fake refuses a card over Feishu's 30 KB as Feishu does."""

from __future__ import annotations

import json

import aiohttp

from bot.llm.scripted import ScriptedProvider
from tests.assistant.support import bot_world, replies, say, send, sleep
from tests.fakes import FeishuFake, SentMessage
from tests.feishu_world import WorldFactory

TABLE = "Here are the scores:\n\n| name | score |\n|---|---|\n| Li | 3 |\n| Wang | 5 |"


def _answer(text: str) -> ScriptedProvider:
    return ScriptedProvider([send("send_user", {"text": text}), sleep])


def _markdown(message: SentMessage) -> str:
    assert message.msg_type == "interactive"
    card = json.loads(message.request_content)
    assert card["schema"] == "2.0"
    [element] = card["body"]["elements"]
    assert element["tag"] == "markdown"
    return str(element["content"])


async def test_a_reply_with_a_markdown_table_goes_out_as_one_card_holding_it(
    make_world: WorldFactory,
) -> None:
    async with bot_world(make_world, _answer(TABLE)) as w:
        await say(w, "scores?")
        await replies(w, 1)
        [message] = w.fake.sent
    assert _markdown(message) == TABLE


async def test_a_40_kb_markdown_reply_arrives_whole_in_cards_in_order(
    make_world: WorldFactory,
) -> None:
    rows = "\n".join(f"| {i} | 第{i}项的说明 |" for i in range(1400))
    text = f"# Inventory\n\n| n | item |\n|---|---|\n{rows}"
    assert len(text.encode()) > 40_000
    async with bot_world(make_world, _answer(text)) as w:
        await say(w, "everything, please")
        await replies(w, 2)
        sent = list(w.fake.sent)
    parts = [_markdown(m) for m in sent]
    assert len(parts) >= 2
    assert parts[0].startswith("# Inventory\n")
    assert all(part.startswith("| n | item |\n|---|---|\n") for part in parts[1:])
    got = [line for part in parts for line in part.split("\n")]
    assert [line for line in got if line.startswith("| ") and line[2].isdigit()] == rows.split("\n")
    assert len({m.uuid for m in sent}) == len(sent)  # each part has its own uuid


async def test_a_40_kb_plain_reply_arrives_whole_in_order(make_world: WorldFactory) -> None:
    text = "\n\n".join(f"第{i}段：今天的进展记录，一切正常。" * 6 for i in range(240))
    assert len(text.encode()) > 40_000
    async with bot_world(make_world, _answer(text)) as w:
        await say(w, "the log")
        await replies(w, 2)
        sent = list(w.fake.sent)
    assert all(m.msg_type == "text" for m in sent)
    assert "".join("".join(str(m.text).split()) for m in sent) == "".join(text.split())


async def _send_card(fake: FeishuFake, card: dict[str, object]) -> tuple[int, int]:
    app_id, _ = fake.new_app()
    token, _ = fake.issue_token(app_id)
    body = {"receive_id": "oc_dm", "msg_type": "interactive", "content": json.dumps(card)}
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{fake.url}/open-apis/im/v1/messages?receive_id_type=chat_id",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
        ) as resp,
    ):
        return resp.status, int((await resp.json())["code"])


async def test_the_fake_refuses_a_card_over_30_kb_as_feishu_does(fake: FeishuFake) -> None:
    card = {"schema": "2.0", "body": {"elements": [{"tag": "markdown", "content": "x" * 31_000}]}}
    assert await _send_card(fake, card) == (400, 230025)
    assert fake.sent == []


async def test_the_fake_refuses_a_json_2_card_without_body_elements(fake: FeishuFake) -> None:
    card = {"schema": "2.0", "elements": [{"tag": "markdown", "content": "hi"}]}  # 1.0's place
    assert await _send_card(fake, card) == (400, 230099)
    assert fake.sent == []

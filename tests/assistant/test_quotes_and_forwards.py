"""A reply reaches the model with the message it quotes, and a merged forward with the
messages it holds: read from the stored records, else from Feishu (the fake's GET message),
always as quoted data; what cannot be had is one line, and the message is answered anyway.
The real Bot, ingest, search follower and lark-oapi client run; only the model is scripted
(its inputs are kept in `.requests`)."""

from __future__ import annotations

import json
import time

from bot.assistant.quotes import CANNOT_SEE
from bot.llm.scripted import ScriptedProvider
from tests.assistant.support import bot_world, last_user_text, replies, say, send
from tests.assistant.support import sleep as sleep_step
from tests.fakes import HistoryMessage, Mention
from tests.feishu_world import FeishuWorld, WorldFactory
from tests.seed import OWNER
from tests.waiting import wait_until

GROUP = "oc_group"
DM = "oc_owner_dm"


def answering() -> ScriptedProvider:
    return ScriptedProvider([send("send_user", {"text": "ok"}), sleep_step])


def model_input(model: ScriptedProvider) -> str:
    assert model.requests, "the model was never asked"
    return last_user_text(model.requests[0][0])


async def reply_in_group(w: FeishuWorld, text: str, parent_id: str) -> None:
    await say(
        w,
        f"@_user_1 {text}",
        sender=OWNER,
        chat_id=GROUP,
        chat_type="group",
        mentions=[Mention(open_id="ou_bot", name="Maka")],
        parent_id=parent_id,
    )


async def test_a_quoted_reply_shows_the_stored_parent_to_the_model(
    make_world: WorldFactory,
) -> None:
    model = answering()
    async with bot_world(make_world, model) as w:
        parent = w.message("the budget is 4200 yuan", chat_id=GROUP, chat_type="group")
        assert (await w.events.post(parent))[0] == 200  # not to the bot: stored, unanswered
        w.fake.messages.pop(parent["event"]["message"]["message_id"])  # only stored here
        await reply_in_group(w, "is that enough?", parent["event"]["message"]["message_id"])
        assert await replies(w, 1) == ["ok"]
        shown = model_input(model)
        assert '<data source="the message m1 replies to, from ou_user at' in shown
        assert "the budget is 4200 yuan" in shown


async def test_a_parent_not_stored_is_fetched_from_feishu(make_world: WorldFactory) -> None:
    model = answering()
    async with bot_world(make_world, model) as w:
        old = HistoryMessage.text(
            "the old plan was kiwi", create_time=time.time() - 3600, message_id="om_old"
        )
        w.fake.add_history(GROUP, [old])
        await reply_in_group(w, "still valid?", "om_old")
        assert await replies(w, 1) == ["ok"]
        assert "the old plan was kiwi" in model_input(model)
        assert w.fake.calls("/open-apis/im/v1/messages/om_old", "GET") == 1


async def test_a_parent_that_cannot_be_found_is_one_line(make_world: WorldFactory) -> None:
    model = answering()
    async with bot_world(make_world, model) as w:
        await reply_in_group(w, "and this?", "om_nowhere")
        assert await replies(w, 1) == ["ok"]
        assert CANNOT_SEE in model_input(model)


def forward_event(w: FeishuWorld, message_id: str) -> dict[str, object]:
    return w.events.message_event(
        message_id=message_id,
        chat_id=DM,
        sender_open_id=OWNER,
        message_type="merge_forward",
        content={"content": "Merged and Forwarded Message"},
    )


async def test_a_merged_forward_reaches_the_model_whole_and_is_searchable(
    make_world: WorldFactory,
) -> None:
    model = answering()
    async with bot_world(make_world, model) as w:
        now = time.time()
        held = [
            HistoryMessage.text("ship on friday alpha7", create_time=now - 60, chat_id="oc_x"),
            HistoryMessage.text("agreed, beta8", create_time=now - 30, sender_open_id="ou_b"),
        ]
        held[1].msg_type, held[1].content = "file", json.dumps({"file_name": "plan.pdf"})
        forward = HistoryMessage.text("", create_time=now, message_id="om_fwd")
        w.fake.add_forward(DM, forward, held)
        assert (await w.events.post(forward_event(w, "om_fwd")))[0] == 200
        assert await replies(w, 1) == ["ok"]
        shown = model_input(model)
        assert '<data source="the 2 messages forwarded in m1">' in shown
        assert "ou_user: ship on friday alpha7" in shown
        assert "ou_b: [file: plan.pdf] (carries: file plan.pdf)" in shown

        async def searchable() -> bool:
            hits = await w.app.services.search.search("alpha7")
            return any(h.id.endswith("om_fwd#forward") for h in hits)

        await wait_until(searchable, what="the forwarded words in search")


async def test_a_forward_that_cannot_be_opened_is_one_line_and_still_answered(
    make_world: WorldFactory,
) -> None:
    model = answering()
    async with bot_world(make_world, model) as w:
        assert (await w.events.post(forward_event(w, "om_unknown")))[0] == 200
        assert await replies(w, 1) == ["ok"]
        shown = model_input(model)
        assert "(a merged forward I could not open: Feishu refused it (230001" in shown

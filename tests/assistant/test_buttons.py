"""Cards with buttons over Feishu: `/matters show N` answers with the Matter's card, a click
(a signed `card.action.trigger` callback) acts as the clicker would by typing the command, and
the card is redrawn in place to show what was done and by whom."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from sqlalchemy import select

from bot.assistant.component import Assistant
from bot.llm.scripted import ScriptedProvider
from storage.models import InboundEvent, Matter, OutboxMessage
from storage.repos import conversations
from tests.assistant.support import (
    bot_world,
    last_user_text,
    quiet,
    replies,
    say,
    say_in_group,
)
from tests.assistant.support import sleep as sleep_step
from tests.channels.feishu.test_long_connection import _connected
from tests.feishu_world import OWNER, FeishuWorld, WorldFactory
from tests.seed import active_matter, owner_dm
from tests.waiting import wait_until


async def _matter(w: FeishuWorld, *, in_group: bool = False) -> int:
    """The owner's Matter, started in their DM or in the group."""
    async with w.app.services.db.write() as s:
        conv = (
            await conversations.get_or_create(
                s, platform="feishu", chat_id="oc_group", chat_type="group"
            )
            if in_group
            else await owner_dm(s)
        )
        return await active_matter(s, conv, OWNER)


async def _status(w: FeishuWorld, matter_id: int) -> str:
    async with w.app.services.db.read() as s:
        matter = await s.get(Matter, matter_id)
        assert matter is not None
        return matter.status


def _buttons(card: dict[str, Any]) -> dict[str, dict[str, str]]:
    """label -> the action its callback carries, from a card JSON 2.0."""
    found: dict[str, dict[str, str]] = {}
    for element in card["body"]["elements"]:
        for column in element.get("columns", []):
            for button in column["elements"]:
                found[button["text"]["content"]] = button["behaviors"][0]["value"]
    return found


async def _show(
    w: FeishuWorld, matter_id: int, *, in_group: bool = False
) -> tuple[str, dict[str, Any]]:
    """The owner asks for the Matter's card; (the card message's id, its card JSON)."""
    if in_group:
        await say_in_group(w, f"/matters show {matter_id}", sender=OWNER)
    else:
        await say(w, f"/matters show {matter_id}")
    await replies(w, 1)
    [card] = [m for m in w.fake.sent if m.msg_type == "interactive"]
    return card.message_id, card.body


def _click(
    w: FeishuWorld,
    card_id: str,
    action: dict[str, str],
    *,
    by: str = OWNER,
    chat: str = "oc_owner_dm",
) -> dict[str, Any]:
    return w.events.card_action_event(
        value=action, open_message_id=card_id, open_chat_id=chat, operator_open_id=by
    )  # fmt: skip


async def test_matters_show_has_buttons_and_the_owners_click_pauses_and_redraws_the_card(
    make_world: WorldFactory,
) -> None:
    async with make_world(bot=Assistant(), model_provider=None, bot_debounce=0.0) as w:
        matter_id = await _matter(w)
        card_id, card = await _show(w, matter_id)
        assert card["header"]["title"]["content"] == f"Task #{matter_id}"
        pause = {"command": f"/matters pause {matter_id}"}
        assert _buttons(card) == {
            "Pause": pause,
            "Cancel": {"command": f"/matters cancel {matter_id}"},
        }

        status, body = await w.events.post(_click(w, card_id, pause))
        assert status == 200, body
        assert json.loads(body)["toast"]["content"] == "Got it"  # answered at once

        await wait_until(lambda: _patched(w, 1), what="the card redrawn")
        await quiet(w)
        assert await _status(w, matter_id) == "paused"
        [patch] = w.fake.patched
        assert patch.message_id == card_id
        assert _buttons(patch.body) == {
            "Resume": {"command": f"/matters resume {matter_id}"},
            "Cancel": {"command": f"/matters cancel {matter_id}"},
        }
        note = patch.body["body"]["elements"][-1]["content"]
        assert note.startswith(f"Paused by {OWNER} at ")
        said = [m.text for m in w.fake.sent if m.msg_type == "text"]
        assert said == [f"Task #{matter_id}: paused."]


async def test_the_same_callback_twice_acts_once(make_world: WorldFactory) -> None:
    async with make_world(bot=Assistant(), model_provider=None, bot_debounce=0.0) as w:
        matter_id = await _matter(w)
        card_id, _ = await _show(w, matter_id)
        click = _click(w, card_id, {"command": f"/matters pause {matter_id}"})
        first, second = await w.events.post(click), await w.events.post(click)
        assert first[0] == second[0] == 200
        assert json.loads(second[1])["toast"]["content"] == "Got it"
        await wait_until(lambda: _patched(w, 1), what="the card redrawn")
        await quiet(w)
        assert len(w.fake.patched) == 1
        assert [m.text for m in w.fake.sent if m.msg_type == "text"] == [
            f"Task #{matter_id}: paused."
        ]
        async with w.app.services.db.read() as s:
            clicks = list(await s.scalars(select(InboundEvent.message_id).where(
                InboundEvent.event_type == "click")))  # fmt: skip
        assert clicks == [f"click-{click['header']['event_id']}"]


async def test_a_forged_or_foreign_callback_is_refused_and_changes_nothing(
    make_world: WorldFactory,
) -> None:
    async with make_world(bot=Assistant(), model_provider=None, bot_debounce=0.0) as w:
        matter_id = await _matter(w)
        card_id, _ = await _show(w, matter_id)
        stored = await w.inbound()
        pause = {"command": f"/matters pause {matter_id}"}
        forged = await w.events.post(_click(w, card_id, pause), forge_signature=True)
        assert forged[0] == 401
        not_ours = await w.events.post(_click(w, card_id, {"command": "rm -rf /"}))
        assert not_ours[0] == 400 and "slash command" in not_ours[1]
        nowhere = _click(w, card_id, pause)
        nowhere["event"]["context"]["open_chat_id"] = "oc_never_seen"
        assert (await w.events.post(nowhere))[0] == 400
        await quiet(w)
        assert await w.inbound() == stored
        assert await _status(w, matter_id) == "active" and w.fake.patched == []


async def test_a_members_click_on_the_owners_matter_changes_nothing_and_says_so(
    make_world: WorldFactory,
) -> None:
    async with make_world(bot=Assistant(), model_provider=None, bot_debounce=0.0) as w:
        matter_id = await _matter(w, in_group=True)
        card_id, _ = await _show(w, matter_id, in_group=True)
        cancel = {"command": f"/matters cancel {matter_id}"}
        click = _click(w, card_id, cancel, by="ou_member", chat="oc_group")
        assert (await w.events.post(click))[0] == 200
        await replies(w, 2)
        assert await _status(w, matter_id) == "active"
        assert w.fake.patched == []
        [refusal] = [m.text for m in w.fake.sent if m.msg_type == "text"]
        assert refusal is not None and "not yours" in refusal


async def _patched(w: FeishuWorld, n: int) -> bool:
    return len(w.fake.patched) >= n


@pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated")
async def test_a_click_over_the_long_connection_works_too(make_world: WorldFactory) -> None:
    async with make_world(
        bot=Assistant(), model_provider=None, bot_debounce=0.0, feishu_mode="ws"
    ) as w:
        await _connected(w)
        app_id = w.app.services.settings.feishu_app_id
        assert app_id
        events = w.fake.ws_event_sender(app_id)
        matter_id = await _matter(w)
        show = events.message_event(
            text=f"/matters show {matter_id}", chat_id="oc_owner_dm", sender_open_id=OWNER
        )
        assert await w.fake.ws_push_event(show) == 200
        await replies(w, 1)
        [card] = [m for m in w.fake.sent if m.msg_type == "interactive"]
        click = events.card_action_event(
            value={"command": f"/matters pause {matter_id}"},
            open_message_id=card.message_id,
            open_chat_id="oc_owner_dm",
            operator_open_id=OWNER,
        )
        assert await w.fake.ws_push_event(click) == 200
        assert await w.fake.ws_push_event(click) == 200  # redelivered: acts once
        answer = w.fake.ws_deliveries[-1].response
        assert answer is not None
        toast = json.loads(base64.b64decode(answer["data"]))["toast"]
        assert toast["content"] == "Got it"
        await wait_until(lambda: _patched(w, 1), what="the card redrawn")
        await quiet(w)
        assert await _status(w, matter_id) == "paused" and len(w.fake.patched) == 1


async def test_a_choice_questions_click_reaches_the_model_as_the_clickers_answer(
    make_world: WorldFactory,
) -> None:
    ask = {"text": "Which report?", "options": ["Budget", "Hiring"]}
    model = ScriptedProvider(
        [
            ScriptedProvider.tool_call("send_user", ask),
            sleep_step,
            ScriptedProvider.tool_call("send_user", {"text": "Budget it is."}),
            sleep_step,
        ]
    )
    async with bot_world(make_world, model) as w:
        await say(w, "send me the report")
        await replies(w, 1)
        [question] = w.fake.sent
        assert question.msg_type == "interactive"
        answers = _buttons(question.body)
        assert list(answers) == ["Budget", "Hiring"]
        assert answers["Budget"]["answer"] == "Budget"
        click = _click(w, question.message_id, answers["Budget"])
        assert (await w.events.post(click))[0] == 200
        assert (await replies(w, 2))[1] == "Budget it is."
        # the question's card closed: no buttons left to answer it twice, who chose what
        await wait_until(lambda: _patched(w, 1), what="the question's card closed")
        [closed] = w.fake.patched
        assert closed.message_id == question.message_id and _buttons(closed.body) == {}
        note = closed.body["body"]["elements"][-1]["content"]
        assert note.startswith(f"Answered “Budget” by {OWNER} at ")
    told = last_user_text(model.requests[2][0])
    assert f"{OWNER} (owner) [clicked this option, answering the question you asked]: Budget" in (
        told
    )


async def test_a_card_feishu_will_not_update_fails_visibly_and_the_click_still_acts(
    make_world: WorldFactory,
) -> None:
    async with make_world(bot=Assistant(), model_provider=None, bot_debounce=0.0) as w:
        matter_id = await _matter(w)
        card_id, _ = await _show(w, matter_id)
        w.fake.recall_message(card_id)
        click = _click(w, card_id, {"command": f"/matters pause {matter_id}"})
        assert (await w.events.post(click))[0] == 200
        await replies(w, 2)
        await quiet(w)
        assert await _status(w, matter_id) == "paused" and w.fake.patched == []
        async with w.app.services.db.read() as s:
            [update] = await s.scalars(
                select(OutboxMessage).where(OutboxMessage.content_type == "card_update")
            )
        assert update.state == "failed" and "230011" in (update.last_error or "")

"""Red team of outward actions, through the real Bot and the Feishu fake: an approval card
reaches the owner's DM and nothing is sent before the click; after Approve the message goes
out exactly once (a click delivered twice is one click); Reject sends nothing; an approval
after expiry does nothing; a group member's request, typed /approve or forged click (a
non-owner clicking the owner's Approve) does nothing; a standing /allow skips the card, and
only one of that chat lets a non-owner act. (Every action tool tried by every attacker, with
nothing run: tests/security/test_red_team.py, `nothing_acted`.)"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import update

from bot.llm.scripted import ScriptedProvider
from bot.web.status.report import build_report
from storage.models import Action, Conversation
from storage.types import utcnow
from tests.actions.support import (
    GROUP,
    OWNER_DM,
    approval_cards,
    buttons,
    click,
    settled,
    texts_in,
    the_approval_card,
)
from tests.assistant.support import bot_world, quiet, say, say_in_group, send
from tests.assistant.support import sleep as sleep_step
from tests.feishu_world import OWNER, FeishuWorld, WorldFactory
from tests.waiting import wait_until

HELLO = {"to": GROUP, "text": "hello team", "reason": "the owner asked me to greet the team"}


def asks_to_send(n: int = 1, **params: str) -> list[object]:
    """The model's steps for `n` requests: each calls send_message, then sleeps."""
    return [send("send_message", {**HELLO, **params}), sleep_step] * n


async def reply_to(w: FeishuWorld, text: str, chat_id: str = OWNER_DM) -> str:
    """The text the bot answered last in a chat, once the world is quiet."""
    await quiet(w)
    said = texts_in(w, chat_id)
    assert said, f"no answer in {chat_id} to {text!r}"
    return said[-1]


def tool_results(provider: ScriptedProvider, name: str) -> list[str]:
    return [
        m.content or ""
        for messages, _ in provider.requests
        for m in messages
        if m.role == "tool" and m.name == name
    ]


async def test_a_message_as_the_bot_waits_for_the_owners_approve_and_goes_out_once(
    make_world: WorldFactory,
) -> None:
    provider = ScriptedProvider(asks_to_send())
    async with bot_world(make_world, provider) as w:
        await say(w, "tell the team hello")
        card = await the_approval_card(w)
        shown = card.content
        assert "hello team" in shown and "the owner asked me to greet the team" in shown
        assert buttons(card.body) == {
            "Approve": {"command": "/approve 1"},
            "Reject": {"command": "/reject 1"},
        }
        await quiet(w)
        assert texts_in(w, GROUP) == []  # nothing before the click
        said = tool_results(provider, "send_message")
        assert any("waits for the owner's approval" in r for r in said), said

        event = await click(w, card, "Approve")
        status, body = await w.events.post(event)  # the same click, delivered again
        assert status == 200, body
        row = await settled(w, 1, "done")
        await wait_until(lambda: _sent(w, GROUP, 1), what="the message in the group")
        await quiet(w)
        assert texts_in(w, GROUP) == ["hello team"]
        assert row.decided_by == OWNER  # who approved is recorded
        assert row.decided_at is not None and row.attempts == 1
        assert [t for t in texts_in(w, OWNER_DM) if t.startswith("Approved action #1")]
        await wait_until(lambda: _patched(w), what="the approval card redrawn")
        redrawn = w.fake.patched[-1]
        assert redrawn.message_id == card.message_id and not buttons(redrawn.body)
        assert f"approved by {OWNER}" in redrawn.content  # as it was at the click

        await say(w, "/why action 1")
        why = await reply_to(w, "/why action 1")
        assert why.startswith("Action #1 (send_message), asked "), why
        assert "because: the owner asked me to greet the team" in why
        assert f"#1 done: send a message as the bot to {GROUP}" in why
        assert f"approved by {OWNER} " in why and "sent to oc_group" in why
        await say_in_group(w, "/why action 1", sender=OWNER)  # asked in the DM: not here
        assert await reply_to(w, "/why", GROUP) == "No action 1 here."


async def _sent(w: FeishuWorld, chat_id: str, n: int) -> bool:
    return len(texts_in(w, chat_id)) >= n


async def _patched(w: FeishuWorld) -> bool:
    return bool(w.fake.patched)


async def test_reject_sends_nothing_and_a_second_answer_says_what_already_happened(
    make_world: WorldFactory,
) -> None:
    async with bot_world(make_world, ScriptedProvider(asks_to_send())) as w:
        await say(w, "tell the team hello")
        card = await the_approval_card(w)
        await click(w, card, "Reject")
        row = await settled(w, 1, "rejected")
        await say(w, "/approve 1")
        answer = await reply_to(w, "/approve 1")
        assert answer.startswith("Action #1 was already decided: #1 rejected"), answer
        assert (await settled(w, 1, "rejected")).decided_at == row.decided_at
        assert texts_in(w, GROUP) == []


async def test_an_approval_after_expiry_does_nothing_and_says_so(make_world: WorldFactory) -> None:
    async with bot_world(make_world, ScriptedProvider(asks_to_send())) as w:
        await say(w, "tell the team hello")
        card = await the_approval_card(w)
        async with w.app.services.db.write() as s:  # a day later, as far as the row knows
            await s.execute(update(Action).values(expires_at=utcnow() - timedelta(minutes=1)))
        await click(w, card, "Approve")
        await settled(w, 1, "expired")
        answer = await reply_to(w, "the click")
        assert answer.startswith("Action #1 expired at "), answer
        assert "nothing was done" in answer
        assert texts_in(w, GROUP) == []


async def test_a_standing_allow_skips_the_card_and_the_row_says_which_allowed_it(
    make_world: WorldFactory,
) -> None:
    async with bot_world(make_world, ScriptedProvider(asks_to_send())) as w:
        await say(w, "/allow send_message")
        assert (await reply_to(w, "/allow")).startswith("/allow #1: send_message now allowed")
        await say(w, "tell the team hello")
        row = await settled(w, 1, "done")
        await wait_until(lambda: _sent(w, GROUP, 1), what="the message in the group")
        await quiet(w)
        assert approval_cards(w) == []
        assert (row.decided_by, row.permission_id) == ("allow #1", 1)
        assert texts_in(w, GROUP) == ["hello team"]
        shown = (await build_report(w.app.services)).actions
        assert shown[0].state == "1 done"
        assert shown[1].name == "action #1 (send_message)"
        assert shown[1].state.startswith(f"done; asked by {OWNER} ")
        assert "; approved by allow #1 " in shown[1].state
        await say(w, "/status")
        assert "\nactions: 1 done" in await reply_to(w, "/status")


async def test_a_group_member_causes_nothing_until_the_owner_approves_or_allows_it_there(
    make_world: WorldFactory,
) -> None:
    member = "ou_member"
    provider = ScriptedProvider(asks_to_send(2, to="oc_dm", text="hi from the bot"))
    async with bot_world(make_world, provider) as w:
        await say(w, "/allow send_message")  # everywhere: the owner's own requests only
        await say_in_group(w, "send ou_user a hi", sender=member)
        card = await the_approval_card(w)
        assert member in card.content
        await say_in_group(w, "/approve 1", sender=member)
        await click(w, card, "Approve", by=member)  # a forged click on the owner's card
        await quiet(w)
        refusals = texts_in(w, GROUP)
        assert refusals.count("not permitted: only the owner approves or allows actions") == 1
        assert (await settled(w, 1, "proposed")).decided_by is None
        assert texts_in(w, "oc_dm") == []

        await say_in_group(w, "/allow send_message here", sender=OWNER)
        await say_in_group(w, "send ou_user a hi", sender=member)
        await settled(w, 2, "done")
        await wait_until(lambda: _sent(w, "oc_dm", 1), what="the allowed message")
        await quiet(w)
        assert texts_in(w, "oc_dm") == ["hi from the bot"]
        assert len(approval_cards(w)) == 1


async def test_a_group_member_learns_no_other_chats_name_from_the_tool(
    make_world: WorldFactory,
) -> None:
    provider = ScriptedProvider(
        [
            send("send_message", {**HELLO, "to": "owner dm"}),  # the owner's DM, by its name
            send("send_message", {**HELLO, "to": OWNER_DM}),  # by its id
            sleep_step,
        ]
    )
    async with bot_world(make_world, provider) as w:
        await say(w, "/whoami")  # the owner's DM is known to the bot, named "owner dm"
        async with w.app.services.db.write() as s:
            await s.execute(update(Conversation).values(name="owner dm"))
        await say_in_group(w, "send the owner a note")
        await the_approval_card(w)
        await quiet(w)
        by_name, by_id = dict.fromkeys(tool_results(provider, "send_message"))  # each once
        assert "no chat named 'owner dm' that I know" in by_name, by_name
        assert "owner dm" not in by_id and OWNER_DM in by_id, by_id


async def test_the_owners_card_works_before_the_owner_ever_wrote_to_the_bot(
    make_world: WorldFactory,
) -> None:
    provider = ScriptedProvider(asks_to_send(to="oc_dm", text="hi from the bot"))
    async with bot_world(make_world, provider) as w:
        await say_in_group(w, "send ou_user a hi")  # the owner's DM is not known yet
        card = await the_approval_card(w)
        assert card.receive_id_type == "open_id" and card.receive_id == OWNER
        await click(w, card, "Approve")
        await settled(w, 1, "done")
        await wait_until(lambda: _sent(w, "oc_dm", 1), what="the approved message")
        await quiet(w)
        assert texts_in(w, "oc_dm") == ["hi from the bot"]

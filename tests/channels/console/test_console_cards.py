"""The console shows every outbox content type the way Feishu would (a card update redraws its
card, a reaction is a badge on the message it names), and a click on a card's button there is
the same InboundClick a Feishu callback is: its action read from the stored card, never from
the page, stored once, refused in one line when it names nothing the bot offered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.channels.cards import Button, Card, CardUpdate
from bot.channels.console.identity import CONSOLE_PLATFORM
from storage.models import InboundEvent
from storage.repos import conversations, outbox, progress_cards
from storage.types import utcnow
from tests.apps import RunningApp, make_settings, running_app
from tests.channels.console.support import NoBot, clicks_handed_to_the_bot, write_replies

PAUSE = {"command": "/matters pause 12"}
CANCEL = {"command": "/matters cancel 12"}


def _card(note: str = "") -> dict[str, Any]:
    buttons = (Button("Pause", PAUSE), Button("Cancel", CANCEL, "danger"))
    return Card("Matter #12", "**running** since 9:00", buttons, note).to_content()


async def _messages(app: RunningApp, query: str = "chat=dm") -> list[dict[str, Any]]:
    async with app.http.get(f"{app.url}/console/api/messages?{query}") as resp:
        assert resp.status == 200, await resp.text()
        return list((await resp.json())["messages"])


async def _click(app: RunningApp, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async with app.http.post(f"{app.url}/console/api/clicks", json=body) as resp:
        return resp.status, await resp.json()


async def test_each_content_type_shows_as_in_feishu(tmp_path: Path, database_url: str) -> None:
    async with running_app(make_settings(tmp_path, database_url), bot=NoBot()) as app:
        async with app.http.post(f"{app.url}/console/api/messages", json={"text": "hi"}) as resp:
            user_message = (await resp.json())["message_id"]
        ids = await write_replies(
            app,
            "console-dm",
            [
                ("reaction", {"message_id": user_message, "emoji": "Typing"}),
                ("text", {"text": "plain"}),
                ("markdown", {"text": "| a | b |\n|---|---|\n| 1 | 2 |"}),
                ("card", _card()),
                ("post", {"title": "T", "paragraphs": ["p1", "p2"]}),
                ("interactive", {"card": {}}),
                ("reaction", {"message_id": user_message, "emoji": "DONE"}),
            ],
        )
        async with app.services.db.read() as tx:
            typing = await outbox.get(tx, ids[0])
            assert typing is not None
            typing_key = typing.idempotency_key
        redrawn = Card("Matter #12", "**paused**", (), "Paused by ou_console_owner")
        await write_replies(
            app,
            "console-dm",
            [
                ("unreaction", {"message_id": user_message, "emoji": "Typing", "of": typing_key}),
                ("card_update", CardUpdate(f"console-{ids[3]}", redrawn).to_content()),
            ],
        )
        shown = await _messages(app)

    user, *bot = shown
    assert (user["id"], user["text"], user["reactions"]) == (user_message, "hi", ["DONE"])
    assert [(m["id"], m["kind"], m.get("text")) for m in bot] == [
        (f"console-{ids[1]}", "text", "plain"),
        (f"console-{ids[2]}", "markdown", "| a | b |\n|---|---|\n| 1 | 2 |"),
        (f"console-{ids[3]}", "card", None),
        (f"console-{ids[4]}", "text", "T\np1\np2"),
        (f"console-{ids[5]}", "text", "[interactive]"),
    ]
    assert bot[2]["card"] == {
        "title": "Matter #12",
        "markdown": "**paused**",
        "buttons": [],
        "note": "Paused by ou_console_owner",
    }


async def test_the_page_gets_a_cards_labels_never_its_actions(
    tmp_path: Path, database_url: str
) -> None:
    async with running_app(make_settings(tmp_path, database_url), bot=NoBot()) as app:
        await write_replies(app, "console-dm", [("card", _card())])
        (card,) = await _messages(app)
    assert card["card"]["buttons"] == [
        {"label": "Pause", "style": "default"},
        {"label": "Cancel", "style": "danger"},
    ]


async def test_a_click_takes_its_action_from_the_stored_card_and_counts_once(
    tmp_path: Path, database_url: str
) -> None:
    async with running_app(make_settings(tmp_path, database_url), bot=NoBot()) as app:
        (card_id,) = await write_replies(app, "console-dm", [("card", _card())])
        click = {"message_id": f"console-{card_id}", "button": 1, "click_id": "a1b2c3d4e5f6"}
        assert await _click(app, click) == (200, {"outcome": "answered"})
        assert await _click(app, click) == (200, {"outcome": "duplicate"})

        handed = await clicks_handed_to_the_bot(app)
        assert [(c["operator_id"], c["chat_id"], c["action"]) for c in handed] == [
            ("ou_console_owner", "console-dm", CANCEL)
        ]
        assert handed[0]["card_message_id"] == f"console-{card_id}"
        shown = await _messages(app)
        assert [m["from"] for m in shown] == ["bot"]  # a click is not a message of the chat


async def test_a_click_on_the_redrawn_card_takes_the_redrawn_cards_button(
    tmp_path: Path, database_url: str
) -> None:
    resume = {"command": "/matters resume 12"}
    async with running_app(make_settings(tmp_path, database_url), bot=NoBot()) as app:
        (card_id,) = await write_replies(app, "console-dm", [("card", _card())])
        redrawn = Card("Matter #12", "paused", (Button("Resume", resume, "primary"),))
        await write_replies(
            app,
            "console-dm",
            [("card_update", CardUpdate(f"console-{card_id}", redrawn).to_content())],
        )
        click = {"message_id": f"console-{card_id}", "button": 0, "click_id": "r1e2s3u4m5e6"}
        assert await _click(app, click) == (200, {"outcome": "answered"})
        assert [c["action"] for c in await clicks_handed_to_the_bot(app)] == [resume]
        status, refused = await _click(app, {**click, "button": 1, "click_id": "second-click"})
        assert (status, refused) == (400, {"error": f"the card console-{card_id} has no button 1"})


@pytest.mark.parametrize(
    ("what", "body", "why"),
    [
        ("no such message", {"message_id": "console-999999"}, "no message console-999999"),
        ("not a console id", {"message_id": "om_123"}, "no message om_123"),
        ("not a card", {"message_id": "TEXT"}, "is not a card"),
        ("no such button", {"button": 2}, "has no button 2"),
        ("another chat's card", {"as": "member"}, "is in another chat"),
        ("the group's card seen from the DM", {"chat": "group"}, "is in another chat"),
        ("an action from the page", {"action": PAUSE}, "action: Extra inputs"),
        ("a button that is not a number", {"button": "0"}, "button: Input should be"),
        ("a click id out of bounds", {"click_id": "x" * 65}, "click_id: String should"),
        ("a click id with odd characters", {"click_id": "../../etc"}, "click_id: String should"),
    ],
)
async def test_a_click_on_nothing_the_bot_offered_is_a_400_with_one_line(
    tmp_path: Path, database_url: str, what: str, body: dict[str, Any], why: str
) -> None:
    async with running_app(make_settings(tmp_path, database_url), bot=NoBot()) as app:
        card_id, text_id = await write_replies(
            app, "console-dm", [("card", _card()), ("text", {"text": "plain"})]
        )
        click = {"message_id": f"console-{card_id}", "button": 0, "click_id": "c0ffee-0001"}
        click.update(body)
        if click["message_id"] == "TEXT":
            click["message_id"] = f"console-{text_id}"
        status, answer = await _click(app, click)
        assert status == 400, what
        assert why in answer["error"] and "\n" not in answer["error"], (what, answer)
        async with app.services.db.read() as tx:
            assert (await tx.scalars(select(InboundEvent))).all() == [], what
        assert await clicks_handed_to_the_bot(app) == []


async def test_a_cross_site_page_cannot_click(tmp_path: Path, database_url: str) -> None:
    async with running_app(make_settings(tmp_path, database_url), bot=NoBot()) as app:
        (card_id,) = await write_replies(app, "console-dm", [("card", _card())])
        body = f'{{"message_id": "console-{card_id}", "button": 0, "click_id": "evil-click-1"}}'
        post = f"{app.url}/console/api/clicks"
        for headers, status in [
            ({"Origin": "http://evil.example", "Content-Type": "application/json"}, 403),
            ({"Content-Type": "text/plain"}, 415),
            ({"Host": "evil.example", "Content-Type": "application/json"}, 403),
        ]:
            async with app.http.post(post, data=body, headers=headers) as resp:
                assert resp.status == status, headers
        assert await clicks_handed_to_the_bot(app) == []


async def test_a_progress_card_shows_where_it_was_made_with_its_steps(
    tmp_path: Path, database_url: str
) -> None:
    async with running_app(make_settings(tmp_path, database_url), bot=NoBot()) as app:
        (before,) = await write_replies(app, "console-dm", [("text", {"text": "on it"})])
        async with app.services.db.write() as tx:
            conv = await conversations.by_chat(tx, CONSOLE_PLATFORM, "console-dm")
            assert conv is not None
            desired = progress_cards.Desired(
                key="turn-1",
                platform=CONSOLE_PLATFORM,
                chat_id="console-dm",
                title="Working on it",
                steps=["searching memory"],
                conversation_id=conv.id,
            )
            await progress_cards.show(tx, desired, utcnow())
        (after,) = await write_replies(app, "console-dm", [("text", {"text": "found it"})])
        shown = await _messages(app)
    assert [(m["id"], m["kind"]) for m in shown] == [
        (f"console-{before}", "text"),
        ("console-card-1", "progress"),
        (f"console-{after}", "text"),
    ]
    assert shown[1]["progress"] == {
        "title": "Working on it",
        "steps": ["searching memory"],
        "status": "working",
    }


async def test_a_click_in_the_group_is_the_clicking_identitys(
    tmp_path: Path, database_url: str
) -> None:
    """The group is shared: whoever the page speaks as clicks, and the Bot checks their role
    as for the command (a member's click on the owner's Matter changes nothing)."""
    async with running_app(make_settings(tmp_path, database_url), bot=NoBot()) as app:
        (card_id,) = await write_replies(app, "console-group", [("card", _card())])
        click = {"message_id": f"console-{card_id}", "button": 0, "click_id": "group-click-1"}
        assert await _click(app, {**click, "chat": "group", "as": "member"}) == (
            200,
            {"outcome": "answered"},
        )
        status, _ = await _click(app, {**click, "click_id": "dm-click-1"})  # from the owner's DM
        assert status == 400
        handed = await clicks_handed_to_the_bot(app)
    assert [(c["operator_id"], c["chat_id"], c["chat_type"]) for c in handed] == [
        ("ou_console_member", "console-group", "group")
    ]

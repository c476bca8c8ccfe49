"""The console page draws the bot's replies as Feishu would: Markdown as Markdown (a table as a
table), cards with their buttons, reactions as badges; a click on a button reaches the bot as
the page's identity, and the card is redrawn in place when the bot updates it. Nothing a reply
says is ever taken as HTML."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest

if importlib.util.find_spec("playwright") is None and not os.environ.get("CI"):
    pytest.skip(
        "Playwright is not installed: run make install (pip install -e '.[test]')",
        allow_module_level=True,
    )

from playwright.async_api import Page, expect

from bot.assistant.component import Assistant
from bot.channels.cards import Button, Card, CardUpdate
from bot.channels.console.identity import CONSOLE_OWNER
from bot.llm.scripted import ScriptedProvider
from storage.models import Matter
from storage.repos import conversations, outbox
from tests.apps import RunningApp, make_settings, running_app
from tests.browser.test_console import open_console, send_with_enter
from tests.channels.console.support import NoBot, clicks_handed_to_the_bot, write_replies
from tests.seed import active_matter
from tests.waiting import wait_until

pytestmark = pytest.mark.asyncio(loop_scope="session")

PLAN = """## The plan

| step | who |
|---|---|
| build | **ci** |
| ship | `me` |

- first *this*
- then _that_ for ou_console_owner

```
if a < b: print("<b>not bold</b>")
```
See [the docs](https://example.com/docs) but not [this](javascript:alert(1))."""


async def test_a_markdown_reply_with_a_table_shows_as_a_table(
    page: Page, tmp_path: Path, database_url: str
) -> None:
    async with running_app(make_settings(tmp_path, database_url), bot=NoBot()) as app:
        problems = await open_console(page, app)
        await write_replies(app, "console-dm", [("markdown", {"text": PLAN})])

        reply = page.locator("#log .msg.bot .bubble")
        table = reply.locator("table")
        await expect(table.locator("th"), "the table's header").to_have_text(["step", "who"])
        await expect(table.locator("tbody tr"), "the table's rows").to_have_count(2)
        await expect(table.locator("td strong"), "bold in a cell").to_have_text("ci")
        await expect(table.locator("td code"), "code in a cell").to_have_text("me")
        await expect(reply.locator("h2"), "the heading").to_have_text("The plan")
        await expect(reply.locator("ul li"), "the list").to_have_text(
            ["first this", "then that for ou_console_owner"]
        )
        await expect(reply.locator("ul li em"), "italic, not inside a word").to_have_text(
            ["this", "that"]
        )
        await expect(reply.locator("pre code"), "the code block, as written").to_have_text(
            'if a < b: print("<b>not bold</b>")'
        )
        await expect(reply.locator("a"), "only the http(s) link").to_have_count(1)
        assert await reply.locator("a").get_attribute("href") == "https://example.com/docs"
        await expect(reply, "the other link, as text").to_contain_text(
            "[this](javascript:alert(1))"
        )
        assert problems.seen == []


HOSTILE = "<img src=x onerror=\"window.hacked='{where}'\"><script>window.hacked='script'</script>"


async def test_the_page_never_executes_html_from_a_reply(
    page: Page, tmp_path: Path, database_url: str
) -> None:
    hostile_card = Card(
        HOSTILE.format(where="title"),
        HOSTILE.format(where="card markdown"),
        (Button(HOSTILE.format(where="label")[:40], {"command": "/help"}),),
        HOSTILE.format(where="note"),
    )
    async with running_app(make_settings(tmp_path, database_url), bot=NoBot()) as app:
        problems = await open_console(page, app)
        await send_with_enter(page, HOSTILE.format(where="typed"))
        await write_replies(
            app,
            "console-dm",
            [
                ("text", {"text": HOSTILE.format(where="text")}),
                ("markdown", {"text": "# " + HOSTILE.format(where="markdown")}),
                ("card", hostile_card.to_content()),
            ],
        )
        bot = page.locator("#log .msg.bot .bubble")
        await expect(bot, "the three replies").to_have_count(3)
        await expect(bot.nth(0), "the text reply, as text").to_contain_text(
            HOSTILE.format(where="text")
        )
        await expect(bot.nth(1).locator("h1"), "the markdown reply, as text").to_have_text(
            HOSTILE.format(where="markdown")
        )
        await expect(bot.nth(2).locator(".card-note"), "the card's note, as text").to_have_text(
            HOSTILE.format(where="note")
        )
        await expect(
            page.locator("#log img, #log script"), "no element from a reply"
        ).to_have_count(0)
        assert await page.evaluate("window.hacked") is None
        assert problems.seen == []


async def test_a_click_on_a_cards_button_reaches_the_bot_and_its_update_redraws_the_card(
    page: Page, tmp_path: Path, database_url: str
) -> None:
    pause, cancel = {"command": "/matters pause 12"}, {"command": "/matters cancel 12"}
    card = Card(
        "Task #12",
        "**active**: watch the deploy",
        (Button("Pause", pause), Button("Cancel", cancel, "danger")),
    )
    async with running_app(make_settings(tmp_path, database_url), bot=NoBot()) as app:
        problems = await open_console(page, app)
        (card_id,) = await write_replies(app, "console-dm", [("card", card.to_content())])

        shown = page.locator("#log .msg.bot .bubble.card")
        await expect(shown.locator(".card-title"), "the card's title").to_have_text("Task #12")
        await expect(shown.locator("strong"), "the card's markdown").to_have_text("active")
        await shown.get_by_role("button", name="Pause").click()

        async def clicked() -> bool:
            return len(await clicks_handed_to_the_bot(app)) == 1

        await wait_until(clicked, what="the click handed to the bot")
        (click,) = await clicks_handed_to_the_bot(app)
        assert (click["operator_id"], click["chat_id"], click["action"]) == (
            "ou_console_owner",
            "console-dm",
            pause,
        )
        assert click["card_message_id"] == f"console-{card_id}"

        # what the Bot writes when it has paused it
        paused = Card("Task #12", "**paused**: watch the deploy", (), "Paused by ou_console_owner")
        await write_replies(
            app,
            "console-dm",
            [("card_update", CardUpdate(f"console-{card_id}", paused).to_content())],
        )
        await expect(shown.locator(".card-note"), "the redrawn card").to_have_text(
            "Paused by ou_console_owner"
        )
        await expect(shown, "the same card, redrawn in place").to_have_count(1)
        await expect(shown.get_by_role("button"), "no buttons left").to_have_count(0)
        await expect(page.locator("#log .msg.bot"), "no message for the update").to_have_count(1)
        assert problems.seen == []


async def test_a_reaction_is_a_badge_on_the_message_until_it_is_taken_off(
    page: Page, tmp_path: Path, database_url: str
) -> None:
    async with running_app(make_settings(tmp_path, database_url), bot=NoBot()) as app:
        problems = await open_console(page, app)
        await send_with_enter(page, "ping")
        user = page.locator("#log .msg.user")
        await expect(user, "the sent message").to_have_count(1)
        message_id = await user.get_attribute("data-id")
        assert message_id and message_id.startswith("console-")

        (typing,) = await write_replies(
            app, "console-dm", [("reaction", {"message_id": message_id, "emoji": "Typing"})]
        )
        badge = user.locator(".badge")
        await expect(badge, "the Typing badge").to_have_attribute("data-emoji", "Typing")
        async with app.services.db.read() as tx:
            row = await outbox.get(tx, typing)
            assert row is not None
        await write_replies(
            app,
            "console-dm",
            [
                (
                    "unreaction",
                    {"message_id": message_id, "emoji": "Typing", "of": row.idempotency_key},
                ),
                ("text", {"text": "pong"}),
            ],
        )
        await expect(page.locator("#log .msg.bot"), "the reply").to_contain_text("pong")
        await expect(badge, "the badge, taken off").to_have_count(0)
        await expect(page.locator("#log .msg"), "no message for a reaction").to_have_count(2)
        assert problems.seen == []


async def _owners_matter(app: RunningApp) -> int:
    """A Matter the console's owner started in their DM (as tests/assistant/test_buttons.py)."""
    async with app.services.db.write() as s:
        conv = await conversations.get_or_create(
            s, platform="console", chat_id="console-dm", chat_type="p2p", peer_open_id=CONSOLE_OWNER
        )
        return await active_matter(s, conv, CONSOLE_OWNER)


async def test_clicking_pause_on_a_matters_card_pauses_it_and_redraws_the_card(
    page: Page, tmp_path: Path, database_url: str
) -> None:
    settings = make_settings(tmp_path, database_url, bot_debounce=0.0)
    # no model, as in tests/assistant/test_buttons.py: the Matter is steered, never run
    async with running_app(settings, bot=Assistant()) as app:
        matter_id = await _owners_matter(app)
        problems = await open_console(page, app)
        await send_with_enter(page, f"/matters show {matter_id}")

        card = page.locator("#log .msg.bot .bubble.card")
        await expect(card.locator(".card-title"), "the Matter's card").to_have_text(
            f"Task #{matter_id}"
        )
        buttons = card.get_by_role("button")
        await expect(buttons, "its buttons").to_have_text(["Pause", "Cancel"])
        await buttons.get_by_text("Pause").click()

        await expect(card.locator(".card-note"), "the card redrawn").to_contain_text(
            f"Paused by {CONSOLE_OWNER} at "
        )
        await expect(buttons, "what can be done now").to_have_text(["Resume", "Cancel"])
        await expect(card, "redrawn in place, not sent again").to_have_count(1)
        await expect(page.locator("#log .msg.bot").last, "the command's answer").to_have_text(
            re.compile(f"Task #{matter_id}: paused.")
        )
        async with app.services.db.read() as s:
            matter = await s.get(Matter, matter_id)
            assert matter is not None and matter.status == "paused"
        assert problems.seen == []


async def test_a_turn_that_takes_time_shows_its_progress_card_before_its_answer(
    page: Page, tmp_path: Path, database_url: str
) -> None:
    provider = ScriptedProvider(
        [
            ScriptedProvider.tool_call("memory_search", {"query": "supplier contract"}),
            ScriptedProvider.tool_call("send_user", {"text": "found it"}),
            ScriptedProvider.tool_call("sleep", {}),
        ]
    )
    settings = make_settings(tmp_path, database_url, bot_debounce=0.0)
    async with running_app(settings, bot=Assistant(), model_provider=provider) as app:
        problems = await open_console(page, app)
        await send_with_enter(page, "what did we agree with the supplier?")

        bot = page.locator("#log .msg.bot .bubble")
        await expect(bot, "the progress card, then the answer").to_have_count(2)
        card = bot.nth(0).locator(".card-title")
        await expect(card, "the turn's card, ended").to_have_attribute("data-status", "done")
        await expect(bot.nth(0).locator(".steps li"), "its steps").to_have_text(
            ["searching memory", "done"]
        )
        await expect(bot.nth(1), "the answer").to_contain_text("found it")
        assert problems.seen == []


async def test_clicking_a_choice_answers_the_models_question(
    page: Page, tmp_path: Path, database_url: str
) -> None:
    provider = ScriptedProvider(
        [
            ScriptedProvider.tool_call(
                "send_user", {"text": "Which report?", "options": ["Budget", "Hiring"]}
            ),
            ScriptedProvider.tool_call("sleep", {}),
            ScriptedProvider.tool_call("send_user", {"text": "Budget it is."}),
            ScriptedProvider.tool_call("sleep", {}),
        ]
    )
    settings = make_settings(tmp_path, database_url, bot_debounce=0.0)
    async with running_app(settings, bot=Assistant(), model_provider=provider) as app:
        problems = await open_console(page, app)
        await send_with_enter(page, "send me the report")

        question = page.locator("#log .msg.bot .bubble.card")
        await expect(question, "the question").to_contain_text("Which report?")
        await expect(question.get_by_role("button"), "its choices").to_have_text(
            ["Budget", "Hiring"]
        )
        await question.get_by_role("button", name="Budget").click()

        await expect(page.locator("#log .msg.bot").last, "the model's answer").to_contain_text(
            "Budget it is."
        )
        assert problems.seen == []
    told = "\n".join(m.content or "" for m in provider.requests[2][0] if m.role == "user")
    assert f"{CONSOLE_OWNER} (owner) [clicked this option" in told and ": Budget" in told

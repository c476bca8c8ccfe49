"""The console page in a real browser, opened where README sends people
(http://127.0.0.1:<port>/console, which redirects to /console/): what is typed and sent with
Enter reaches the bot, and the reply shows on the page. If the page breaks (its script fails,
fetches the wrong URL, is blocked by its own CSP), the reply never shows and the wait fails
saying what it waited for and what the page showed."""

from __future__ import annotations

import asyncio
import importlib.util
import os
from pathlib import Path

import pytest

if importlib.util.find_spec("playwright") is None and not os.environ.get("CI"):
    pytest.skip(
        "Playwright is not installed: run make install (pip install -e '.[test]')",
        allow_module_level=True,
    )

from playwright.async_api import ConsoleMessage, Page, Response, Route, expect
from sqlalchemy import select

from bot.assistant.component import Assistant
from bot.llm.scripted import ScriptedProvider
from bot.llm.types import Message
from storage.models import InboxItem
from tests.apps import RunningApp, make_settings, running_app
from tests.waiting import wait_until

pytestmark = pytest.mark.asyncio(loop_scope="session")


class PageProblems:
    """What went wrong in the page while the app was up: script errors, console errors
    (a CSP violation is one) and failed or refused requests."""

    def __init__(self, page: Page) -> None:
        self.seen: list[str] = []
        page.on("pageerror", lambda exc: self.seen.append(f"script error: {exc}"))
        page.on("console", self._console)
        page.on("response", self._response)
        page.on("requestfailed", lambda r: self.seen.append(f"{r.url}: {r.failure}"))

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.seen.append(f"console error: {message.text}")

    def _response(self, response: Response) -> None:
        if response.status >= 400:
            self.seen.append(f"{response.request.method} {response.url}: {response.status}")


async def open_console(page: Page, app: RunningApp) -> PageProblems:
    problems = PageProblems(page)
    response = await page.goto(f"{app.url}/console")  # README's address, without the slash
    assert response is not None and response.ok, response and response.status
    # the page's relative API URLs (api/messages) reach /console/api/ only from /console/
    await expect(page, "the redirect to /console/").to_have_url(f"{app.url}/console/")
    await expect(page).to_have_title("Maka Assistant · console")
    return problems


async def send_with_enter(page: Page, text: str) -> None:
    box = page.locator("#text")
    await box.click()
    await box.press_sequentially(text)
    await box.press("Enter")


async def check_the_page_is_well(page: Page, problems: PageProblems, sent: str) -> None:
    """The sent message shows as the user's, the box was emptied, and nothing went wrong."""
    await expect(page.locator("#log .msg.user .bubble").first, "the sent message").to_contain_text(
        sent
    )
    await expect(page.locator("#text"), "the emptied message box").to_have_value("")
    await expect(page.locator("#error"), "the page's error line").to_have_text("")
    assert problems.seen == []


async def test_help_typed_and_sent_with_enter_shows_the_reply(
    page: Page, tmp_path: Path, database_url: str
) -> None:
    settings = make_settings(tmp_path, database_url, bot_debounce=0.0)
    async with running_app(settings, bot=Assistant(), model_provider=ScriptedProvider()) as app:
        problems = await open_console(page, app)
        await send_with_enter(page, "/help")

        reply = page.locator("#log .msg.bot .bubble")
        await expect(reply, "the /help reply on the page").to_contain_text("Commands:")
        shown = await reply.inner_text()
        for usage, summary in [
            ("/help", "list the commands you can use"),
            ("/whoami", "who the assistant thinks you are"),
            ("/status", "workers, queues, failed sends, Feishu API and model usage"),
        ]:
            assert f"{usage}  — {summary}" in shown, shown
        await check_the_page_is_well(page, problems, "/help")


async def test_what_is_typed_while_a_message_is_being_sent_is_kept_and_sent_next(
    page: Page, tmp_path: Path, database_url: str
) -> None:
    """A person types on while the last message is still on its way: the box was emptied when
    it was sent, so the answer to that send does not wipe what came after."""
    settings = make_settings(tmp_path, database_url, bot_debounce=0.0)
    async with running_app(settings, bot=Assistant(), model_provider=ScriptedProvider()) as app:
        problems = await open_console(page, app)
        held, release = asyncio.Event(), asyncio.Event()

        async def hold_the_first_send(route: Route) -> None:
            if route.request.method == "POST" and not held.is_set():
                held.set()
                await release.wait()
            await route.continue_()

        await page.route("**/api/messages*", hold_the_first_send)
        await send_with_enter(page, "/help")

        async def first_send_on_its_way() -> bool:
            return held.is_set()

        await wait_until(first_send_on_its_way, what="the first message to be on its way")
        await page.locator("#text").press_sequentially("/whoami")
        async with page.expect_response(lambda r: r.request.method == "POST"):
            release.set()
        user = page.locator("#log .msg.user .bubble")
        await expect(user.first, "the first message on the page").to_contain_text("/help")
        await expect(page.locator("#text"), "what was typed meanwhile").to_have_value("/whoami")
        await page.locator("#text").press("Enter")

        bot = page.locator("#log .msg.bot .bubble")
        await expect(bot, "a reply to each of the two").to_have_count(2)
        await expect(bot.nth(1), "the /whoami reply").to_contain_text("owner")
        await expect(user, "both messages on the page").to_have_count(2)
        await check_the_page_is_well(page, problems, "/help")
        async with app.services.db.read() as tx:
            items = (await tx.scalars(select(InboxItem).order_by(InboxItem.id))).all()
        assert [item.payload["text"] for item in items] == ["/help", "/whoami"]


async def test_a_conversation_with_the_model_shows_its_reply(
    page: Page, tmp_path: Path, database_url: str
) -> None:
    provider = ScriptedProvider(
        [
            ScriptedProvider.tool_call("send_user", {"text": "hello from the model"}),
            ScriptedProvider.tool_call("sleep", {}),
        ]
    )
    settings = make_settings(tmp_path, database_url, bot_debounce=0.0)
    async with running_app(settings, bot=Assistant(), model_provider=provider) as app:
        problems = await open_console(page, app)
        await send_with_enter(page, "what is on my plate today?")

        reply = page.locator("#log .msg.bot .bubble")
        await expect(reply, "the model's reply on the page").to_contain_text("hello from the model")
        await check_the_page_is_well(page, problems, "what is on my plate today?")

        async def turn_over() -> bool:
            return provider.remaining == 0

        await wait_until(turn_over, timeout=30, what="the model's turn to end with sleep")
    assert "what is on my plate today?" in _user_text(provider.requests[0][0])


def _user_text(messages: list[Message]) -> str:
    return "\n".join(m.content or "" for m in messages if m.role == "user")

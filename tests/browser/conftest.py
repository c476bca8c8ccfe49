"""Browser tests: Playwright for Python drives Debian's Chromium (/usr/bin/chromium, which
`make test` installs through scripts/ensure-chromium; `playwright install` is never used).

One headless Chromium serves the whole session; each test gets a fresh context and page, and
leaves a screenshot of that page in .pytest_artifacts/<test name>.png, whether it passed or
not. Without Chromium or Playwright the browser tests are skipped with the reason, except
under CI, where that is a failure.

The browser lives on the session's event loop, so the tests that use it run there too:
mark them `pytest.mark.asyncio(loop_scope="session")`.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

CHROMIUM = Path("/usr/bin/chromium")
# Generous for a busy 2-core machine: a wait that runs out fails with what it waited for.
TIMEOUT_MS = 30_000


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser() -> AsyncIterator[Browser]:
    if importlib.util.find_spec("playwright") is None:
        _unavailable("Playwright is not installed: run make install (pip install -e '.[test]')")
    if not os.access(CHROMIUM, os.X_OK):
        _unavailable(
            f"no Chromium at {CHROMIUM}: run scripts/ensure-chromium (apt-get install chromium)"
        )
    from playwright.async_api import async_playwright, expect

    expect.set_options(timeout=TIMEOUT_MS)
    async with async_playwright() as playwright:
        # Playwright starts Chromium with --no-sandbox (its chromium_sandbox defaults to off),
        # which running as root needs.
        chromium = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, timeout=TIMEOUT_MS * 2
        )
        try:
            yield chromium
        finally:
            await chromium.close()


@pytest_asyncio.fixture(loop_scope="session")
async def page(browser: Browser, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    """A fresh page; its screenshot is saved when the test ends, passed or failed."""
    context = await browser.new_context(viewport={"width": 1000, "height": 760})
    context.set_default_timeout(TIMEOUT_MS)
    context.set_default_navigation_timeout(TIMEOUT_MS)
    opened = await context.new_page()
    try:
        yield opened
    finally:
        artifacts = request.config.rootpath / ".pytest_artifacts"
        artifacts.mkdir(exist_ok=True)
        name = re.sub(r"[^\w.-]+", "_", request.node.name).strip("_")
        try:
            await opened.screenshot(path=str(artifacts / f"{name}.png"), full_page=True)
        finally:
            await context.close()

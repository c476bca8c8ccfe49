"""The status page in a real browser, on a seeded database: it loads, its two charts are drawn
(SVG with bars in them), the red items show what to do, and with an admin token set it asks
for the token and lets the admin in through its login form. `make screenshots` is not needed:
this test also refreshes docs/status-page.png when MAKA_UPDATE_SCREENSHOTS is set."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

if importlib.util.find_spec("playwright") is None and not os.environ.get("CI"):
    pytest.skip(
        "Playwright is not installed: run make install (pip install -e '.[test]')",
        allow_module_level=True,
    )

from playwright.async_api import Page, expect

from tests.apps import make_settings, running_app
from tests.web.status_seed import INDEX_ERROR, SOURCE_ERROR, seed_status

pytestmark = pytest.mark.asyncio(loop_scope="session")
DOCS = Path(__file__).resolve().parents[2] / "docs" / "status-page.png"


async def test_the_status_page_draws_its_charts_and_shows_red_items_with_hints(
    page: Page, tmp_path: Path, database_url: str
) -> None:
    settings = make_settings(tmp_path, database_url)
    async with running_app(settings) as app:
        await seed_status(app.services.db)
        await page.goto(f"{app.url}/status")
        await expect(page.locator("h1")).to_have_text("Maka status")
        charts = page.locator("svg.chart")
        await expect(charts).to_have_count(2)
        for n in range(2):
            box = await charts.nth(n).bounding_box()
            assert box is not None and box["width"] > 100 and box["height"] > 50
            assert await charts.nth(n).locator("rect").count() >= 7, f"chart {n} has no bars"
        red = page.locator("tr.red")
        assert await red.count() >= 3
        await expect(page.locator("tr.red", has_text=SOURCE_ERROR)).to_contain_text(
            "What to do: the last sync failed"
        )
        await expect(page.locator("tr.red", has_text=INDEX_ERROR)).to_contain_text(
            "What to do: could not check for new records"
        )
        await expect(page.locator(".summary")).to_contain_text("need attention")
        if os.environ.get("MAKA_UPDATE_SCREENSHOTS"):
            await page.screenshot(path=str(tmp_path / "status.png"), full_page=True)
            shutil.copy(tmp_path / "status.png", DOCS)


async def test_with_a_token_the_page_asks_for_it_and_the_form_lets_the_admin_in(
    page: Page, tmp_path: Path, database_url: str
) -> None:
    settings = make_settings(tmp_path, database_url, admin_token="open-sesame-4711")
    async with running_app(settings) as app:
        response = await page.goto(f"{app.url}/status")
        assert response is not None and response.status == 401
        await page.fill("input[name=token]", "wrong")
        await page.press("input[name=token]", "Enter")
        await expect(page.locator("body")).to_contain_text("That is not the admin token.")
        await page.fill("input[name=token]", "open-sesame-4711")
        await page.press("input[name=token]", "Enter")
        await expect(page.locator("h2").first).to_have_text("Sources")
        assert page.url == f"{app.url}/status"

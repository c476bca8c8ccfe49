"""The Feishu fake's calendar behaves as the calendar/v4 docs say: one event per
idempotency_key, listing by page_token and then only the changes by sync_token (a deleted
event as `cancelled`), an unknown token is 190008, and only the calendar's own user may touch
it (the app's tenant token reaches the app's calendar, not the owner's)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.fakes import FeishuFake
from tests.fakes.feishu_oauth import UserTokens

BASE = "/open-apis/calendar/v4/calendars"
TIMES = {"start_time": {"timestamp": "1893900000"}, "end_time": {"timestamp": "1893901800"}}


@pytest.fixture
async def fake() -> AsyncIterator[FeishuFake]:
    async with FeishuFake() as server:
        yield server


def user_token(fake: FeishuFake, open_id: str = "ou_owner") -> str:
    app_id, _ = fake.new_app()
    tokens = fake._issue(app_id, open_id, "calendar:calendar")
    assert isinstance(tokens, UserTokens)
    return tokens.access_token


async def call(
    fake: FeishuFake, token: str, method: str, path: str, body: Any = None, **query: str
) -> tuple[int, dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as http,
        http.request(
            method,
            fake.url + path,
            json=body,
            params=query,
            headers={"Authorization": f"Bearer {token}"},
        ) as response,
    ):
        return response.status, await response.json()


async def test_the_same_idempotency_key_gives_back_the_same_event(fake: FeishuFake) -> None:
    token = user_token(fake)
    _, primary = await call(fake, token, "POST", f"{BASE}/primary")
    calendar_id = primary["data"]["calendars"][0]["calendar"]["calendar_id"]
    answers = [
        await call(
            fake,
            token,
            "POST",
            f"{BASE}/{calendar_id}/events",
            {"summary": "Sync", **TIMES},
            idempotency_key="k1",
        )
        for _ in range(2)
    ]
    ids = {body["data"]["event"]["event_id"] for _, body in answers}
    assert len(ids) == 1 and len(fake.live_events("ou_owner")) == 1


async def test_a_sync_token_lists_only_the_changes(fake: FeishuFake) -> None:
    token = user_token(fake)
    first = fake.put_event("ou_owner", "one", 1893900000, 1893901800)
    fake.put_event("ou_owner", "two", 1893900000, 1893901800)
    calendar_id = fake.calendar_of("ou_owner")
    path = f"{BASE}/{calendar_id}/events"
    _, page1 = await call(fake, token, "GET", path, page_size="1")
    assert page1["data"]["has_more"] and "sync_token" not in page1["data"]
    _, page2 = await call(fake, token, "GET", path, page_token=page1["data"]["page_token"])
    assert [e["summary"] for e in page1["data"]["items"] + page2["data"]["items"]] == [
        "one",
        "two",
    ]
    sync_token = page2["data"]["sync_token"]
    fake.delete_event(first.event_id)
    _, changes = await call(fake, token, "GET", path, sync_token=sync_token)
    assert [(e["event_id"], e["status"]) for e in changes["data"]["items"]] == [
        (first.event_id, "cancelled")
    ]
    status, stale = await call(fake, token, "GET", path, sync_token="nonsense")
    assert (status, stale["code"]) == (400, 190008)


async def test_only_the_calendars_own_user_may_touch_it(fake: FeishuFake) -> None:
    mine = fake.put_event("ou_owner", "private", 1893900000, 1893901800)
    calendar_id = fake.calendar_of("ou_owner")
    other = user_token(fake, "ou_someone")
    status, body = await call(fake, other, "DELETE", f"{BASE}/{calendar_id}/events/{mine.event_id}")
    assert (status, body["code"]) == (403, 191002)
    assert fake.live_events("ou_owner") == [mine]

"""The Feishu fake's message reactions answer as the message-reaction docs say: add, list and
remove, with the documented error codes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.fakes import FeishuFake, HistoryMessage

BASE = "/open-apis/im/v1/messages"


class _Client:
    def __init__(self, fake: FeishuFake, http: aiohttp.ClientSession) -> None:
        app_id, _ = fake.new_app()
        self.app_id = app_id
        self.token, _ = fake.issue_token(app_id)
        self.fake, self.http = fake, http

    async def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, dict[str, Any]]:
        headers = {"Authorization": f"Bearer {self.token}"}
        async with self.http.request(
            method, self.fake.url + path, headers=headers, **kwargs
        ) as resp:
            return resp.status, await resp.json()


@pytest.fixture
async def client() -> AsyncIterator[_Client]:
    async with FeishuFake() as fake, aiohttp.ClientSession() as http:
        fake.add_chat("oc_dm", name="dm", chat_type="p2p", p2p_user="ou_user")
        fake.add_history("oc_dm", [HistoryMessage.text("hi", create_time=0, message_id="om_1")])
        yield _Client(fake, http)


def _typing(emoji: str = "Typing") -> dict[str, Any]:
    return {"json": {"reaction_type": {"emoji_type": emoji}}}


async def test_an_added_reaction_is_listed_as_the_apps_and_can_be_removed(
    client: _Client,
) -> None:
    status, added = await client.call("POST", f"{BASE}/om_1/reactions", **_typing())
    assert (status, added["code"]) == (200, 0)
    reaction = added["data"]
    assert reaction["operator"] == {"operator_id": client.app_id, "operator_type": "app"}
    assert reaction["reaction_type"] == {"emoji_type": "Typing"}
    _, listed = await client.call(
        "GET", f"{BASE}/om_1/reactions", params={"reaction_type": "Typing"}
    )
    assert [r["reaction_id"] for r in listed["data"]["items"]] == [reaction["reaction_id"]]
    path = f"{BASE}/om_1/reactions/{reaction['reaction_id']}"
    assert (await client.call("DELETE", path))[1]["code"] == 0
    status, again = await client.call("DELETE", path)
    assert (status, again["code"]) == (400, 231007)  # not there any more
    assert [e.action for e in client.fake.reactions_log] == ["add", "remove"]


async def test_an_emoji_not_on_feishus_list_is_refused(client: _Client) -> None:
    status, body = await client.call("POST", f"{BASE}/om_1/reactions", **_typing("NOPE"))
    assert (status, body["code"]) == (400, 231001)


async def test_a_missing_or_recalled_message_takes_no_reaction(client: _Client) -> None:
    status, body = await client.call("POST", f"{BASE}/om_missing/reactions", **_typing())
    assert (status, body["code"]) == (400, 231003)
    client.fake.recall_message("om_1")
    status, body = await client.call("POST", f"{BASE}/om_1/reactions", **_typing())
    assert (status, body["code"]) == (400, 230011)
    assert client.fake.reactions == {}

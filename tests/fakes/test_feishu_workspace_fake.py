"""The Feishu fake's documents and tasks answer as the docs say: a user token is required,
pages carry their tokens, a deleted or forbidden document is refused with its code, a
client_token creates one task. A user token lists and reads the user's own chats."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest

from tests.fakes import FeishuFake
from tests.fakes.feishu_models import HistoryMessage


@pytest.fixture
async def fake() -> AsyncIterator[FeishuFake]:
    async with FeishuFake() as server:
        yield server


async def call(
    fake: FeishuFake, token: str, method: str, path: str, **kwargs: Any
) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, f"{fake.url}/open-apis/{path}", headers=headers, **kwargs) as r,
    ):
        return r.status, await r.json()


def user_token(fake: FeishuFake) -> str:
    app_id, _ = fake.new_app()
    return fake._issue(app_id, "ou_owner", "offline_access").access_token


async def test_documents_need_a_user_token_and_say_when_deleted_or_forbidden(
    fake: FeishuFake,
) -> None:
    app_id, _ = fake.new_app()
    tenant, _ = fake.issue_token(app_id)
    fake.put_doc("doxA", "A", "alpha")
    status, body = await call(fake, tenant, "GET", "drive/v1/files")
    assert (status, body["code"]) == (400, 99991668)

    token = user_token(fake)
    for n in range(3):
        fake.put_doc(f"dox{n}", f"doc {n}", "text")
    status, body = await call(fake, token, "GET", "drive/v1/files", params={"page_size": "3"})
    assert status == 200 and len(body["data"]["files"]) == 3 and body["data"]["has_more"]
    rest = {"page_size": "3", "page_token": body["data"]["next_page_token"]}
    _, body = await call(fake, token, "GET", "drive/v1/files", params=rest)
    assert [f["token"] for f in body["data"]["files"]] == ["dox2"]

    _, body = await call(fake, token, "GET", "docx/v1/documents/doxA/raw_content")
    assert body["data"]["content"] == "alpha"
    fake.docs["doxA"].deleted = True
    _, body = await call(fake, token, "GET", "docx/v1/documents/doxA/raw_content")
    assert body["code"] == 1770003
    fake.docs["dox0"].forbidden = True
    status, body = await call(fake, token, "GET", "docx/v1/documents/dox0/raw_content")
    assert (status, body["code"]) == (403, 1770032)


async def test_a_client_token_creates_one_task_and_an_unknown_task_is_not_found(
    fake: FeishuFake,
) -> None:
    token = user_token(fake)
    body = {"summary": "s", "client_token": "maka-action-7"}
    _, first = await call(fake, token, "POST", "task/v2/tasks", json=body)
    _, again = await call(fake, token, "POST", "task/v2/tasks", json=body)
    assert first["data"]["task"]["guid"] == again["data"]["task"]["guid"]
    assert len(fake.tasks) == 1
    patch = {"task": {"completed_at": "1700000000000"}, "update_fields": ["completed_at"]}
    _, done = await call(
        fake, token, "PATCH", f"task/v2/tasks/{first['data']['task']['guid']}", json=patch
    )
    assert done["data"]["task"]["status"] == "done"
    status, missing = await call(fake, token, "PATCH", "task/v2/tasks/nope", json=patch)
    assert (status, missing["code"]) == (400, 1470404)


async def test_a_user_token_lists_and_reads_the_users_chats_whether_or_not_the_bot_is_in(
    fake: FeishuFake,
) -> None:
    owner = user_token(fake)
    tenant, _ = fake.issue_token(fake.new_app()[0])
    fake.add_chat("oc_mine", name="mine", bot_in_chat=False, members={"ou_owner"})
    fake.add_chat("oc_bots", name="bots")  # the bot's group; the owner is not in it
    when = datetime.fromtimestamp(fake.now() - 5, UTC)
    fake.add_history("oc_mine", [HistoryMessage.text("hello", create_time=when)])

    _, chats = await call(fake, owner, "GET", "im/v1/chats")
    assert [c["chat_id"] for c in chats["data"]["items"]] == ["oc_mine"]
    _, chats = await call(fake, tenant, "GET", "im/v1/chats")
    assert "oc_mine" not in [c["chat_id"] for c in chats["data"]["items"]]

    query = {"container_id_type": "chat", "container_id": "oc_mine"}
    _, listed = await call(fake, owner, "GET", "im/v1/messages", params=query)
    assert [m["body"]["content"] for m in listed["data"]["items"]] == ['{"text": "hello"}']
    _, refused = await call(fake, tenant, "GET", "im/v1/messages", params=query)
    assert refused["code"] == 230002  # the bot is not in it
    query["container_id"] = "oc_bots"
    _, refused = await call(fake, owner, "GET", "im/v1/messages", params=query)
    assert refused["code"] == 230027  # nor is the owner

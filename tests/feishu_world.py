"""A running app wired to the Feishu fake, for tests that go through Feishu."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from bot.channels.feishu.channel import FeishuChannel
from bot.config import Role
from bot.llm.client import ModelProvider
from bot.runtime import COMPONENTS, Component
from storage.models import InboundEvent, InboxItem, OutboxMessage
from tests.apps import RunningApp, make_settings, running_app
from tests.echo_responder import EchoComponent
from tests.fakes import FeishuEventSender, FeishuFake, HistoryMessage
from tests.seed import OWNER
from tests.waiting import wait_until

ENCRYPT_KEY = "test-encrypt-key"
VERIFICATION_TOKEN = "test-verification-token"


@dataclass
class FeishuWorld:
    fake: FeishuFake
    app: RunningApp
    events: FeishuEventSender

    def message(self, text: str, **kwargs: Any) -> dict[str, Any]:
        """A message event, also stored at the fake as Feishu would have it (so replies to it
        find their target)."""
        event = self.events.message_event(text=text, **kwargs)
        msg = event["event"]["message"]
        self.fake.add_history(
            msg["chat_id"],
            [
                HistoryMessage.text(
                    text,
                    create_time=int(msg["create_time"]) / 1000,
                    sender_open_id=event["event"]["sender"]["sender_id"]["open_id"],
                    message_id=msg["message_id"],
                    mentions=kwargs.get("mentions"),
                    root_id=msg.get("root_id"),
                    parent_id=msg.get("parent_id"),
                    thread_id=msg.get("thread_id"),
                )
            ],
        )
        return event

    async def count(self, model: Any, *where: Any) -> int:
        async with self.app.services.db.read() as s:
            return int(await s.scalar(select(func.count()).select_from(model).where(*where)) or 0)

    async def inbound(self) -> int:
        return await self.count(InboundEvent)

    async def inbox_items(self) -> int:
        return await self.count(InboxItem)

    async def outbox_rows(self, *where: Any) -> int:
        return await self.count(OutboxMessage, *where)


@pytest.fixture
async def fake() -> AsyncIterator[FeishuFake]:
    async with FeishuFake(bot_open_id="ou_bot", bot_name="Maka") as server:
        server.add_chat("oc_dm", name="dm", chat_type="p2p", p2p_user="ou_user")
        server.add_chat("oc_owner_dm", name="owner dm", chat_type="p2p", p2p_user=OWNER)
        server.add_chat("oc_group", name="team")
        yield server


WorldFactory = Callable[..., AbstractAsyncContextManager[FeishuWorld]]


@pytest.fixture
def make_world(tmp_path: Path, database_url: str, fake: FeishuFake) -> WorldFactory:
    app_id, app_secret = fake.new_app()

    @asynccontextmanager
    async def world(
        *,
        role: Role = Role.ALL,
        extra: list[Component] | None = None,
        bot: Component | None = None,
        model_provider: ModelProvider | None = None,
        name: str = "a",
        **overrides: Any,
    ) -> AsyncIterator[FeishuWorld]:
        settings = make_settings(
            tmp_path / name,
            database_url,
            feishu_app_id=app_id,
            feishu_app_secret=app_secret,
            feishu_encrypt_key=ENCRYPT_KEY,
            feishu_verification_token=VERIFICATION_TOKEN,
            feishu_domain=fake.url,
            owner=OWNER,
            **overrides,
        )
        async with running_app(
            settings, role, extra, bot=bot or EchoComponent(), model_provider=model_provider
        ) as app:
            events = FeishuEventSender(
                f"{app.url}/feishu/events",
                app_id=app_id,
                encrypt_key=ENCRYPT_KEY,
                verification_token=VERIFICATION_TOKEN,
            )
            if role in (Role.WEB, Role.ALL):
                await knows_its_own_open_id(app)
            yield FeishuWorld(fake, app, events)

    return world


async def knows_its_own_open_id(app: RunningApp) -> None:
    """Wait, as Feishu's retries would, until the channel can tell @mentions apart: before
    that every event is a 503 (test_messages_wait_with_503_until_the_bot_knows_its_own_open_id),
    and on a busy machine the first fetch of the open_id can take longer than BOT_INFO_WAIT."""
    channel = next(c for c in app.app[COMPONENTS] if isinstance(c, FeishuChannel))

    async def known() -> bool:
        return await channel.bot_open_id() is not None

    await wait_until(known, what="the bot's own open_id (GET /open-apis/bot/v3/info)")

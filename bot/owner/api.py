"""The Feishu client that reads and acts as the owner (sources/feishu/owner_api.py), with the
one retry policy (bot/retry.py): a rate limit waits the server's delay, a 5xx backs off. Every
call is counted in the API quota (`api_usage`), as the bot's own are."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bot.channels.api_usage import ApiUsageCounter
from bot.config import Settings
from bot.retry import retry_call
from sources.feishu.owner_api import Answer, FeishuBusy, OwnerApi, TokenProvider
from storage.db import Database


def _busy(exc: BaseException) -> bool:
    return isinstance(exc, FeishuBusy)


async def _retried(call: Callable[[], Awaitable[Answer]]) -> Answer:
    return await retry_call(call, _busy)


def owner_api(settings: Settings, db: Database, token: TokenProvider) -> OwnerApi:
    """The client for one source or action; its `aclose` flushes its count."""
    usage = ApiUsageCounter(db, "feishu", settings.tz)
    return OwnerApi(settings.feishu_domain, token, retry=_retried, usage=usage)

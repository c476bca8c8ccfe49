"""The Feishu client that reads and acts as the owner (sources/feishu/owner_api.py), with the
one retry policy (bot/retry.py): a rate limit waits the server's delay, a 5xx backs off."""

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


def owner_api(settings: Settings, token: TokenProvider, db: Database | None = None) -> OwnerApi:
    """With `db`, every call is counted as the channel's are (`api_usage`, platform feishu:
    the same tenant quota), flushed when the client closes."""
    if db is None:
        return OwnerApi(settings.feishu_domain, token, retry=_retried)
    usage = ApiUsageCounter(db, "feishu", settings.tz)
    return OwnerApi(
        settings.feishu_domain, token, retry=_retried, count=usage.count, on_close=usage.aclose
    )

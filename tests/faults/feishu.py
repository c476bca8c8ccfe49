"""The Feishu stand-in: the loopback Feishu fake, plus one fault it lacks: holding message
sends, or calendar event creates (the request has fully arrived, the answer has not left), so
a test can kill the process that is waiting on one. A held request is processed when
released: Feishu created the message or the event, its sender never heard so."""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes import FeishuFake

SEND_PATH = "/open-apis/im/v1/messages"
EVENT_CREATE = re.compile(r"/open-apis/calendar/v4/calendars/[^/]+/events")


def _is_message_send(path: str) -> bool:
    """A message created or a reply: not a receipt's reaction (`…/:id/reactions`), which
    carries no `uuid` and is not what a held send is about."""
    return path == SEND_PATH or (path.startswith(f"{SEND_PATH}/") and path.endswith("/reply"))


@dataclass
class HeldSend:
    uuid: str | None  # a message's `uuid`, an event's `idempotency_key`: what dedupes it
    released: asyncio.Event = field(default_factory=asyncio.Event)

    def release(self) -> None:
        self.released.set()


class FeishuStandIn(FeishuFake):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._hold_next = 0
        self.held: asyncio.Queue[HeldSend] = asyncio.Queue()
        self._hold_creates = 0
        self.held_creates: asyncio.Queue[HeldSend] = asyncio.Queue()
        self.created_at: dict[str, float] = {}  # message_id -> time.monotonic() at creation

    def hold_next_sends(self, times: int = 1) -> None:
        """The next `times` message sends wait for `HeldSend.release()` (see `held`)."""
        self._hold_next = times

    def hold_next_event_creates(self, times: int = 1) -> None:
        """The next `times` calendar event creates wait for `HeldSend.release()` (see
        `held_creates`)."""
        self._hold_creates = times

    def storm(self, status: int) -> None:
        """Every message send answers `status` (429 as Feishu's rate limit, or a 5xx) until
        `calm()`."""
        if status == 429:
            self.rate_limit_next(SEND_PATH, times=10**9, method="POST")
        else:
            self.fail_next(SEND_PATH, times=10**9, http_status=status, method="POST")

    def calm(self) -> None:
        self.clear_faults()

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if self._hold_next > 0 and request.method == "POST" and _is_message_send(request.path):
            self._hold_next -= 1
            body = await request.json()
            held = HeldSend(body.get("uuid") if isinstance(body, dict) else None)
            await self.held.put(held)
            await held.released.wait()
        elif (
            self._hold_creates > 0
            and request.method == "POST"
            and EVENT_CREATE.fullmatch(request.path)
        ):
            self._hold_creates -= 1
            await request.read()  # the whole request has arrived
            held = HeldSend(request.query.get("idempotency_key"))
            await self.held_creates.put(held)
            await held.released.wait()
        before = len(self.sent)
        response = await FeishuFake._middleware(self, request, handler)
        for message in self.sent[before:]:
            self.created_at.setdefault(message.message_id, time.monotonic())
        return response

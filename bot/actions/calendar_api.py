"""The owner's Feishu calendar, called as the owner (their user_access_token, refreshed by
bot/owner/tokens.py before every try): the primary calendar, and an event's create, attendees,
move and cancel. Each call goes through the owner's Feishu client (bot/owner/api.py: usage
counted, 429 waits the server's `x-ogw-ratelimit-reset`, 5xx retried by the one retry policy).

- POST /open-apis/calendar/v4/calendars/primary: `data.calendars[].calendar.calendar_id`
  https://open.feishu.cn/document/server-docs/calendar-v4/calendar/primary
- POST /open-apis/calendar/v4/calendars/:calendar_id/events?idempotency_key=: one event per
  key ("创建日程的幂等 key"): a create sent again after a crash returns the same event
  https://open.feishu.cn/document/server-docs/calendar-v4/calendar-event/create
- POST .../events/:event_id/attendees?user_id_type=open_id: `attendees: [{type: user,
  user_id}]`; an attendee already there stays one attendee
  https://open.feishu.cn/document/server-docs/calendar-v4/calendar-event-attendee/create
- PATCH .../events/:event_id (start_time / end_time)
  https://open.feishu.cn/document/server-docs/calendar-v4/calendar-event/patch
- DELETE .../events/:event_id
  https://open.feishu.cn/document/server-docs/calendar-v4/calendar-event/delete
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from bot.config import Settings
from bot.owner.api import owner_api
from sources.feishu.calendar import CalendarApiError, events_path, primary_calendar_id
from sources.feishu.owner_api import FeishuError, OwnerApi
from storage.db import Database

# The calendar error table (…/calendar-v4/calendar-event/*, "错误码"): the event is gone.
EVENT_NOT_FOUND = 193001
EVENT_DELETED = 193002  # (as the fake answers a deleted event; both read "gone")
GONE = frozenset({EVENT_NOT_FOUND, EVENT_DELETED})


class NoCalendar(Exception):
    """Feishu named no primary calendar for the owner."""


@dataclass
class OwnerCalendar:
    api: OwnerApi

    async def primary(self) -> str:
        try:
            return await primary_calendar_id(self.api)
        except CalendarApiError as exc:
            raise NoCalendar(str(exc)) from exc

    async def create(
        self, calendar_id: str, *, title: str, start: datetime, end: datetime, key: str
    ) -> str:
        data = await self.api.call(
            "POST",
            events_path(calendar_id),
            params={"idempotency_key": key, "user_id_type": "open_id"},
            body={"summary": title, **_times(start, end)},
            api="calendar.event.create",
        )
        return str((data.get("event") or {})["event_id"])

    async def invite(self, calendar_id: str, event_id: str, open_ids: Sequence[str]) -> None:
        await self.api.call(
            "POST",
            events_path(calendar_id, quote(event_id, safe=""), "attendees"),
            params={"user_id_type": "open_id"},
            body={
                "attendees": [{"type": "user", "user_id": o} for o in open_ids],
                "need_notification": True,
            },
            api="calendar.event.attendee.create",
        )

    async def move(self, calendar_id: str, event_id: str, start: datetime, end: datetime) -> None:
        await self.api.call(
            "PATCH",
            events_path(calendar_id, quote(event_id, safe="")),
            body=_times(start, end),
            api="calendar.event.patch",
        )

    async def cancel(self, calendar_id: str, event_id: str) -> bool:
        """False when the event was gone already (a cancel run again after a crash)."""
        try:
            await self.api.call(
                "DELETE",
                events_path(calendar_id, quote(event_id, safe="")),
                params={"need_notification": "true"},
                api="calendar.event.delete",
            )
        except FeishuError as exc:
            if exc.code in GONE:
                return False
            raise
        return True


def _times(start: datetime, end: datetime) -> dict[str, Any]:
    return {
        "start_time": {"timestamp": str(int(start.timestamp()))},
        "end_time": {"timestamp": str(int(end.timestamp()))},
    }


@asynccontextmanager
async def owner_calendar(
    settings: Settings, db: Database, token: Callable[[], Awaitable[str]]
) -> AsyncIterator[OwnerCalendar]:
    """An OwnerCalendar on its own HTTP session for one action (actions are rare: no session
    is kept between them), its calls counted."""
    api = owner_api(settings, db, token)
    try:
        yield OwnerCalendar(api)
    finally:
        await api.aclose()

"""The owner's Feishu calendar, called as the owner (their user_access_token, refreshed by
bot/owner/tokens.py before every try): the primary calendar, and an event's create, attendees,
move and cancel. Each call goes through `FeishuApi.call` (usage counted, 429 waits the
server's `x-ogw-ratelimit-reset`, 5xx retried by the one retry policy).

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

from bot.channels.feishu.api import FeishuApi, FeishuApiError, counted_api
from bot.config import Settings
from sources.feishu.calendar import CalendarApiError, primary_calendar_id
from sources.feishu.sdk import (
    CreateCalendarEventAttendeeRequest,
    CreateCalendarEventRequest,
    DeleteCalendarEventRequest,
    PatchCalendarEventRequest,
)
from storage.db import Database

# The calendar error table (…/calendar-v4/calendar-event/*, "错误码"): the event is gone.
EVENT_NOT_FOUND = 193001
EVENT_DELETED = 193002  # (as the fake answers a deleted event; both read "gone")
GONE = frozenset({EVENT_NOT_FOUND, EVENT_DELETED})


class NoCalendar(Exception):
    """Feishu named no primary calendar for the owner."""


@dataclass
class OwnerCalendar:
    api: FeishuApi
    token: Callable[[], Awaitable[str]]  # the owner's token provider

    async def _call(self, name: str, request: Any) -> dict[str, Any]:
        resp = await self.api.call(
            name, lambda opt: self.api.send(request, opt), as_user=self.token
        )
        return resp.data

    async def primary(self) -> str:
        try:
            return await primary_calendar_id(self._call)
        except CalendarApiError as exc:
            raise NoCalendar(str(exc)) from exc

    async def create(
        self, calendar_id: str, *, title: str, start: datetime, end: datetime, key: str
    ) -> str:
        request = (
            CreateCalendarEventRequest.builder()
            .calendar_id(calendar_id)
            .idempotency_key(key)
            .user_id_type("open_id")
            .build()
        )
        request.body = {"summary": title, **_times(start, end)}
        data = await self._call("calendar.event.create", request)
        return str((data.get("event") or {})["event_id"])

    async def invite(self, calendar_id: str, event_id: str, open_ids: Sequence[str]) -> None:
        request = (
            CreateCalendarEventAttendeeRequest.builder()
            .calendar_id(calendar_id)
            .event_id(event_id)
            .user_id_type("open_id")
            .build()
        )
        request.body = {
            "attendees": [{"type": "user", "user_id": o} for o in open_ids],
            "need_notification": True,
        }
        await self._call("calendar.event.attendee.create", request)

    async def move(self, calendar_id: str, event_id: str, start: datetime, end: datetime) -> None:
        request = (
            PatchCalendarEventRequest.builder().calendar_id(calendar_id).event_id(event_id).build()
        )
        request.body = _times(start, end)
        await self._call("calendar.event.patch", request)

    async def cancel(self, calendar_id: str, event_id: str) -> bool:
        """False when the event was gone already (a cancel run again after a crash)."""
        request = (
            DeleteCalendarEventRequest.builder()
            .calendar_id(calendar_id)
            .event_id(event_id)
            .need_notification("true")
            .build()
        )
        try:
            await self._call("calendar.event.delete", request)
        except FeishuApiError as exc:
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
    is kept between them)."""
    # Few tries: the action worker backs off between its own.
    api, usage = counted_api(settings, db, attempts=3, max_wait=30.0)
    try:
        yield OwnerCalendar(api, token)
    finally:
        await api.aclose()
        await usage.aclose()

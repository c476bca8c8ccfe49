"""The owner's Feishu calendar as a source, read as the owner (issue #41): one unit,
`calendar:primary` (the owner's primary calendar), scoped `owner:calendar`, so the visibility
rule shows it in the owner's DM only, and in a chat the owner shares it with
(`/sync share calendar:primary`).

Each event's attendees are read with the attendee list
(https://open.feishu.cn/document/server-docs/calendar-v4/calendar-event-attendee/list).
Events are listed incrementally (https://open.feishu.cn/document/server-docs/calendar-v4/
calendar-event/list): the first sync pages through every event (`page_token`) and keeps the
`sync_token` of its last page; each sync after it lists only what changed since, a deleted
event with `status: cancelled`. The cursor `{"sync_token": t, "page_token": p}` moves with
every committed page, so a killed sync resumes at its next page. A token Feishu no longer
accepts (190008) starts the listing again from the beginning.

A record per event version: external id `<event_id>#v<digest of its text>`. A changed event
(moved, renamed) is a new version, and the page removes the event's other versions
(`Removal(keep=...)`, recalls' tombstones), so search finds the new time and not the old; a
cancelled event's versions are all removed. Every request asks the token provider first (a
fresh token each time; "sign in again: ..." when the owner is not signed in, shown as the
source's error; no retries beyond the caller's policy).

This module imports nothing from `bot`: the owner's Feishu client (`OwnerApi`, with the
owner's token, the retry policy and the usage counter) is handed in.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncGenerator
from datetime import UTC, datetime, tzinfo
from typing import Any
from urllib.parse import quote

from sources.base import Observation, Page, Removal, SyncRequest, Unit, UnitState
from sources.feishu.owner_api import FeishuError, OwnerApi
from sources.feishu.owner_units import CALENDAR_KIND, CALENDAR_SCOPE, CALENDAR_UNIT
from storage.repos.source_records import NewRecord

KIND = CALENDAR_KIND
UNIT = CALENDAR_UNIT
SCOPE = CALENDAR_SCOPE
PAGE_SIZE = 500
ATTENDEES_SHOWN = 100  # the attendee list's page size maximum
TOKEN_EXPIRED = 190008  # "page_token or sync_token expired": list again from the start
CANCELLED = "cancelled"
EVENT_GONE = 193001  # the calendar error table: event not found
CALENDARS = "calendar/v4/calendars"


class CalendarApiError(Exception):
    """Feishu's answer lacks what the calendar needs."""


def events_path(calendar_id: str, *rest: str) -> str:
    """`calendar/v4/calendars/:calendar_id/events[/...]`, each id quoted (a calendar id
    may hold `@`)."""
    return "/".join([CALENDARS, quote(calendar_id, safe=""), "events", *rest])


async def primary_calendar_id(api: OwnerApi) -> str:
    """The owner's primary calendar (`POST calendar/v4/calendars/primary`), asked as the
    owner: the source's and the calendar actions' alike."""
    data = await api.call(
        "POST", f"{CALENDARS}/primary", params={"user_id_type": "open_id"}, api="calendar.primary"
    )
    for entry in data.get("calendars") or []:
        calendar_id = (entry.get("calendar") or {}).get("calendar_id")
        if calendar_id:
            return str(calendar_id)
    raise CalendarApiError("Feishu gave no primary calendar for the owner")


def _when(value: dict[str, Any] | None, tz: tzinfo) -> datetime | None:
    stamp = (value or {}).get("timestamp")
    if stamp and str(stamp).isdigit():
        return datetime.fromtimestamp(int(stamp), UTC).astimezone(tz)
    day = (value or {}).get("date")  # an all-day event
    if day:
        return datetime.fromisoformat(str(day)).replace(tzinfo=tz)
    return None


def event_text(event: dict[str, Any], tz: tzinfo) -> str:
    """What search and the model read: summary, time range (the owner's time zone),
    location, attendees, description."""
    start, end = _when(event.get("start_time"), tz), _when(event.get("end_time"), tz)
    lines = [f"Calendar event: {event.get('summary') or '(no title)'}"]
    if start and end:
        same_day = start.date() == end.date()
        tail = end.strftime("%H:%M") if same_day else end.strftime("%Y-%m-%d %H:%M")
        lines.append(f"When: {start:%Y-%m-%d %H:%M}–{tail} ({start.tzname()})")
    location = (event.get("location") or {}).get("name")
    if location:
        lines.append(f"Where: {location}")
    people = [
        str(a.get("display_name") or a.get("user_id") or "")
        for a in event.get("attendees") or []
        if isinstance(a, dict)
    ]
    if any(people):
        lines.append(f"With: {', '.join(p for p in people if p)}")
    if event.get("description"):
        lines.append(str(event["description"]))
    return "\n".join(lines)


def event_record(event: dict[str, Any], tz: tzinfo) -> NewRecord:
    text = event_text(event, tz)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    event_id = str(event["event_id"])
    return NewRecord(
        source=UNIT,
        external_id=f"{event_id}#v{digest}",
        scope=SCOPE,
        text=text,
        sent_at=_when(event.get("start_time"), tz),
        title=str(event.get("summary") or "") or None,
        thread_key=event_id,
        payload={
            "origin": "calendar",
            "event_id": event_id,
            "start": (event.get("start_time") or {}).get("timestamp"),
            "end": (event.get("end_time") or {}).get("timestamp"),
        },
    )


class OwnerCalendarSource:
    kind = KIND

    def __init__(self, api: OwnerApi, *, tz: tzinfo) -> None:
        self.api = api
        self.tz = tz

    async def _primary(self) -> str:
        return await primary_calendar_id(self.api)

    async def observe(self) -> Observation:
        calendar_id = await self._primary()
        unit = Unit(
            UNIT, SCOPE, "the owner's calendar", observed_cursor={"calendar_id": calendar_id}
        )
        return Observation([unit], {"calendar_id": calendar_id})

    async def sync(self, unit: UnitState, request: SyncRequest) -> AsyncGenerator[Page, None]:
        calendar_id = str((unit.observed_cursor or {}).get("calendar_id") or "")
        if not calendar_id:
            calendar_id = await self._primary()
        cursor = dict(unit.synced_cursor or {})
        sync_token, page_token = cursor.get("sync_token"), cursor.get("page_token")
        while True:
            try:
                data = await self._list(calendar_id, sync_token, page_token)
            except FeishuError as exc:
                if exc.code != TOKEN_EXPIRED or not (sync_token or page_token):
                    raise
                sync_token = page_token = None  # Feishu forgot the token: list everything
                continue
            records, removed = await self._changes(calendar_id, data.get("items") or [])
            more = bool(data.get("has_more")) and bool(data.get("page_token"))
            if more:
                page_token = str(data["page_token"])
                after = {"sync_token": sync_token, "page_token": page_token}
                yield Page(records=records, cursor=after, removed=removed)
                continue
            after = {"sync_token": data.get("sync_token") or sync_token}
            yield Page(records=records, cursor=after, removed=removed)
            return

    async def _list(
        self, calendar_id: str, sync_token: str | None, page_token: str | None
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"page_size": PAGE_SIZE, "user_id_type": "open_id"}
        if page_token:
            params["page_token"] = page_token
        elif sync_token:
            params["sync_token"] = sync_token
        path = events_path(calendar_id)
        return await self.api.call("GET", path, params=params, api="calendar.event.list")

    async def _attendees(self, calendar_id: str, event_id: str) -> list[dict[str, Any]]:
        """The event's attendees (the events list does not carry them): one page, enough
        for a record's "With:" line."""
        path = events_path(calendar_id, quote(event_id, safe=""), "attendees")
        params = {"user_id_type": "open_id", "page_size": ATTENDEES_SHOWN}
        try:
            data = await self.api.call(
                "GET", path, params=params, api="calendar.event.attendee.list"
            )
        except FeishuError as exc:
            if exc.code == EVENT_GONE:
                return []  # deleted since it was listed: the next sync removes it
            raise
        return [a for a in data.get("items") or [] if isinstance(a, dict)]

    async def _changes(
        self, calendar_id: str, items: list[dict[str, Any]]
    ) -> tuple[list[NewRecord], list[Removal]]:
        records: list[NewRecord] = []
        removed: list[Removal] = []
        for event in items:
            event_id = str(event.get("event_id") or "")
            if not event_id:
                continue
            if event.get("status") == CANCELLED:
                removed.append(Removal(UNIT, event_id, SCOPE))
                continue
            if "attendees" not in event:
                event = {**event, "attendees": await self._attendees(calendar_id, event_id)}
            record = event_record(event, self.tz)
            records.append(record)
            removed.append(Removal(UNIT, event_id, SCOPE, keep=record.external_id))
        return records, removed

    async def aclose(self) -> None:
        await self.api.aclose()

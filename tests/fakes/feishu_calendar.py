"""The calendar of the Feishu fake (calendar/v4), as the docs describe it:

- POST /open-apis/calendar/v4/calendars/primary: the caller's primary calendar (a user
  token: the user's; a tenant token: the app's own)
  https://open.feishu.cn/document/server-docs/calendar-v4/calendar/primary
- POST /open-apis/calendar/v4/calendars/:calendar_id/events?idempotency_key=: creates an
  event; the same idempotency_key gives back the event it created, never a second
  https://open.feishu.cn/document/server-docs/calendar-v4/calendar-event/create
- GET  .../events?page_size&page_token&sync_token: the events, `has_more`, `page_token`,
  and on the last page a `sync_token`; listed with a sync_token, only what changed since,
  a deleted event with `status: cancelled`; 190008 for a token it does not know
  https://open.feishu.cn/document/server-docs/calendar-v4/calendar-event/list
- PATCH / DELETE .../events/:event_id; 193001 for an event that is not there (deleted)
  https://open.feishu.cn/document/server-docs/calendar-v4/calendar-event/patch
  https://open.feishu.cn/document/server-docs/calendar-v4/calendar-event/delete
- POST .../events/:event_id/attendees?user_id_type=open_id: `attendees: [{type: user,
  user_id}]`; an attendee already there stays one
  https://open.feishu.cn/document/server-docs/calendar-v4/calendar-event-attendee/create
- GET  .../events/:event_id/attendees: `items: [{type, attendee_id, user_id, display_name}]`
  (one page here: the fake's events have few attendees)
  https://open.feishu.cn/document/server-docs/calendar-v4/calendar-event-attendee/list

Only the calendar's own user (or the app, for its calendar) may touch it: 191002 otherwise.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .feishu_models import FeishuApiError

INVALID_PARAMS = (190002, "invalid parameters in request")
SYNC_TOKEN_EXPIRED = (190008, "page_token or sync_token expired")
CALENDAR_NOT_FOUND = (191000, "calendar not found")
NO_CALENDAR_ACCESS = (191002, "no calendar access_role")
EVENT_NOT_FOUND = (193001, "event not found")
PAGE_MAX = 500  # page_size: "最大值为 1000", the doc's default 500


@dataclass
class FakeEvent:
    event_id: str
    calendar_id: str
    summary: str
    start: str  # epoch seconds, as the API's `timestamp`
    end: str
    description: str = ""
    location: str = ""
    attendees: list[str] = field(default_factory=list)  # open_ids
    deleted: bool = False
    changed: int = 0  # the fake's change counter when it last changed (for sync tokens)

    def to_api(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "event_id": self.event_id,
            "organizer_calendar_id": self.calendar_id,
            "summary": self.summary,
            "description": self.description,
            "start_time": {"timestamp": self.start},
            "end_time": {"timestamp": self.end},
            "status": "cancelled" if self.deleted else "confirmed",
        }
        if self.location:
            data["location"] = {"name": self.location}
        return data


class CalendarHandlers:
    """Mixin for FeishuFake: calendars by owner (`ou_…` or `app:<app_id>`), their events."""

    def __init__(self) -> None:
        self.calendars: dict[str, str] = {}  # owner -> calendar_id
        self.events: dict[str, FakeEvent] = {}
        self.event_keys: dict[tuple[str, str], str] = {}  # (calendar_id, key) -> event_id
        self.calendar_changes = 0

    # what FeishuFake provides
    user_tokens: dict[str, Any]

    def authenticate(self, request: web.Request) -> str:
        raise NotImplementedError

    def add_calendar_routes(self, app: web.Application) -> None:
        base = "/open-apis/calendar/v4/calendars"
        app.router.add_post(f"{base}/primary", self._primary)
        app.router.add_post(f"{base}/{{calendar_id}}/events", self._create_event)
        app.router.add_get(f"{base}/{{calendar_id}}/events", self._list_events)
        app.router.add_patch(f"{base}/{{calendar_id}}/events/{{event_id}}", self._patch_event)
        app.router.add_delete(f"{base}/{{calendar_id}}/events/{{event_id}}", self._delete_event)
        app.router.add_post(
            f"{base}/{{calendar_id}}/events/{{event_id}}/attendees", self._add_attendees
        )
        app.router.add_get(
            f"{base}/{{calendar_id}}/events/{{event_id}}/attendees", self._list_attendees
        )

    # ---- test controls ---------------------------------------------------------------------

    def calendar_of(self, owner: str) -> str:
        if owner not in self.calendars:
            self.calendars[owner] = "cal_" + secrets.token_hex(6)
        return self.calendars[owner]

    def live_events(self, owner: str) -> list[FakeEvent]:
        calendar_id = self.calendar_of(owner)
        return [e for e in self.events.values() if e.calendar_id == calendar_id and not e.deleted]

    def put_event(
        self, owner: str, summary: str, start: int, end: int, *, event_id: str = "", **more: Any
    ) -> FakeEvent:
        """An event the owner made in Feishu themselves."""
        event = self._new_event(self.calendar_of(owner), summary, str(start), str(end), **more)
        if event_id:
            self.events[event_id] = self.events.pop(event.event_id)
            event.event_id = event_id
        return event

    def move_event(self, event_id: str, start: int, end: int) -> None:
        event = self.events[event_id]
        event.start, event.end = str(start), str(end)
        self._touch(event)

    def delete_event(self, event_id: str) -> None:
        event = self.events[event_id]
        event.deleted = True
        self._touch(event)

    # ---- helpers ---------------------------------------------------------------------------

    def _caller(self, request: web.Request) -> str:
        app_id = self.authenticate(request)
        token = request.headers.get("Authorization", "").partition(" ")[2].strip()
        if token.startswith("u-"):
            return str(self.user_tokens[token].open_id)
        return f"app:{app_id}"

    def _calendar(self, request: web.Request) -> str:
        caller = self._caller(request)
        calendar_id = request.match_info["calendar_id"]
        if calendar_id not in self.calendars.values():
            raise FeishuApiError(CALENDAR_NOT_FOUND, http_status=404)
        if self.calendars.get(caller) != calendar_id:
            raise FeishuApiError(NO_CALENDAR_ACCESS, http_status=403)
        return calendar_id

    def _event(self, request: web.Request) -> FakeEvent:
        calendar_id = self._calendar(request)
        event = self.events.get(request.match_info["event_id"])
        if event is None or event.deleted or event.calendar_id != calendar_id:
            raise FeishuApiError(EVENT_NOT_FOUND, http_status=404)
        return event

    def _touch(self, event: FakeEvent) -> None:
        self.calendar_changes += 1
        event.changed = self.calendar_changes

    def _new_event(
        self, calendar_id: str, summary: str, start: str, end: str, **more: Any
    ) -> FakeEvent:
        event = FakeEvent("evt_" + secrets.token_hex(8), calendar_id, summary, start, end, **more)
        self.events[event.event_id] = event
        self._touch(event)
        return event

    @staticmethod
    def _ok(data: dict[str, Any]) -> web.Response:
        return web.json_response({"code": 0, "msg": "success", "data": data})

    @staticmethod
    async def _body(request: web.Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise FeishuApiError(INVALID_PARAMS, detail="body is not a JSON object")
        return body

    @staticmethod
    def _timestamp(body: dict[str, Any], name: str) -> str:
        value = (body.get(name) or {}).get("timestamp")
        if not isinstance(value, str) or not value.isdigit():
            raise FeishuApiError(INVALID_PARAMS, detail=f"{name}.timestamp")
        return value

    # ---- endpoints -------------------------------------------------------------------------

    async def _primary(self, request: web.Request) -> web.Response:
        caller = self._caller(request)
        calendar = {"calendar_id": self.calendar_of(caller), "type": "primary", "role": "owner"}
        user = caller if caller.startswith("ou_") else ""
        return self._ok({"calendars": [{"calendar": calendar, "user_id": user}]})

    async def _create_event(self, request: web.Request) -> web.Response:
        calendar_id = self._calendar(request)
        body = await self._body(request)
        key = request.query.get("idempotency_key")
        if key and (calendar_id, key) in self.event_keys:
            return self._ok({"event": self.events[self.event_keys[(calendar_id, key)]].to_api()})
        start, end = self._timestamp(body, "start_time"), self._timestamp(body, "end_time")
        if int(end) <= int(start):
            raise FeishuApiError(INVALID_PARAMS, detail="end_time before start_time")
        event = self._new_event(
            calendar_id,
            str(body.get("summary") or ""),
            start,
            end,
            description=str(body.get("description") or ""),
            location=str((body.get("location") or {}).get("name") or ""),
        )
        if key:
            self.event_keys[(calendar_id, key)] = event.event_id
        return self._ok({"event": event.to_api()})

    async def _patch_event(self, request: web.Request) -> web.Response:
        event = self._event(request)
        body = await self._body(request)
        if "start_time" in body:
            event.start = self._timestamp(body, "start_time")
        if "end_time" in body:
            event.end = self._timestamp(body, "end_time")
        if "summary" in body:
            event.summary = str(body["summary"])
        self._touch(event)
        return self._ok({"event": event.to_api()})

    async def _delete_event(self, request: web.Request) -> web.Response:
        event = self._event(request)
        event.deleted = True
        self._touch(event)
        return self._ok({})

    async def _add_attendees(self, request: web.Request) -> web.Response:
        event = self._event(request)
        body = await self._body(request)
        if request.query.get("user_id_type", "open_id") != "open_id":
            raise FeishuApiError(INVALID_PARAMS, detail="the fake speaks open_id")
        for attendee in body.get("attendees") or []:
            if attendee.get("type") != "user" or not str(attendee.get("user_id", "")):
                raise FeishuApiError(INVALID_PARAMS, detail="attendee")
            if attendee["user_id"] not in event.attendees:
                event.attendees.append(str(attendee["user_id"]))
        shown = [{"type": "user", "user_id": a, "attendee_id": a} for a in event.attendees]
        return self._ok({"attendees": shown})

    async def _list_attendees(self, request: web.Request) -> web.Response:
        event = self._event(request)
        names: dict[str, str] = getattr(self, "user_names", {})
        items = [
            {"type": "user", "attendee_id": a, "user_id": a, "display_name": names.get(a, a)}
            for a in event.attendees
        ]
        return self._ok({"items": items, "has_more": False})

    async def _list_events(self, request: web.Request) -> web.Response:
        calendar_id = self._calendar(request)
        size = min(int(request.query.get("page_size") or PAGE_MAX), PAGE_MAX)
        sync_token, page_token = request.query.get("sync_token"), request.query.get("page_token")
        # page_token "pt_<since>_<upto>_<offset>"; sync_token "st_<upto>": the change counter
        if page_token:
            try:
                _, since_s, upto_s, offset_s = page_token.split("_")
                since, upto, offset = int(since_s), int(upto_s), int(offset_s)
            except ValueError:
                raise FeishuApiError(SYNC_TOKEN_EXPIRED) from None
        else:
            since, upto, offset = 0, self.calendar_changes, 0
            if sync_token:
                if not sync_token.startswith("st_") or not sync_token[3:].isdigit():
                    raise FeishuApiError(SYNC_TOKEN_EXPIRED)
                since = int(sync_token[3:])
        changed = sorted(
            (
                e
                for e in self.events.values()
                if e.calendar_id == calendar_id
                and since < e.changed <= upto
                and (since > 0 or not e.deleted)  # a first listing shows no deleted events
            ),
            key=lambda e: (e.changed, e.event_id),
        )
        page = changed[offset : offset + size]
        more = offset + size < len(changed)
        data: dict[str, Any] = {"items": [e.to_api() for e in page], "has_more": more}
        if more:
            data["page_token"] = f"pt_{since}_{upto}_{offset + size}"
        else:
            data["sync_token"] = f"st_{upto}"
        return self._ok(data)

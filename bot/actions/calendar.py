"""Calendar action kinds, done as the owner on their primary calendar: `create_event` (with
attendees by open_id), `move_event`, `cancel_event`.

Exactly once: a create carries the row's idempotency key as Feishu's `idempotency_key`, so a
run again after a crash between the call and its record gets the same event back, never a
second; inviting an attendee already invited changes nothing; a move sets the same times
again; a cancel of an event already gone is done. Without the owner's sign-in an action fails
at once with "sign in again: ..." (no retries); Feishu refusing the request (a non-zero
code) fails it with Feishu's line; a token that cannot be refreshed just now
(`TokenUnavailable`), a 5xx or a 429 is raised and retried by the action worker with backoff.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta, tzinfo
from typing import Any

from bot.actions.calendar_api import OwnerCalendar, owner_calendar
from bot.actions.registry import ActionFailed, register_executor
from bot.owner.tokens import OwnerTokens, SignInNeeded
from bot.services import Services
from sources.feishu.owner_api import FeishuError
from storage.models import Action

CREATE, MOVE, CANCEL = "create_event", "move_event", "cancel_event"
MAX_TITLE = 200
MAX_ATTENDEES = 50
MAX_LENGTH = timedelta(days=7)


def _time(params: dict[str, Any], name: str) -> datetime:
    try:
        at = datetime.fromisoformat(str(params.get(name)))
    except ValueError:
        raise ValueError(f"the {name} is not an ISO date and time") from None
    if at.tzinfo is None:
        raise ValueError(f"the {name} needs its time zone (like 2026-12-07T10:00+08:00)")
    return at


def _span(params: dict[str, Any]) -> tuple[datetime, datetime]:
    start, end = _time(params, "start"), _time(params, "end")
    if end <= start:
        raise ValueError("the event ends before it starts")
    if end - start > MAX_LENGTH:
        raise ValueError(f"the event is longer than {MAX_LENGTH.days} days")
    return start, end


def _attendees(params: dict[str, Any]) -> list[str]:
    found = [str(a).strip() for a in params.get("attendees") or [] if str(a).strip()]
    bad = [a for a in found if not a.startswith("ou_")]
    if bad:
        raise ValueError(f"attendees are open_ids (ou_…), not {', '.join(bad[:3])}")
    if len(found) > MAX_ATTENDEES:
        raise ValueError(f"more than {MAX_ATTENDEES} attendees")
    return list(dict.fromkeys(found))


def _event(params: dict[str, Any]) -> str:
    event = str(params.get("event") or "").strip()
    if not event:
        raise ValueError("say which event: its event id")
    return event


def span_words(start: datetime, end: datetime, tz: tzinfo) -> str:
    """`2026-12-07 10:00–10:30` in the owner's time zone (the end's date when it differs)."""
    a, b = start.astimezone(tz), end.astimezone(tz)
    tail = b.strftime("%H:%M") if a.date() == b.date() else b.strftime("%Y-%m-%d %H:%M")
    return f"{a:%Y-%m-%d %H:%M}–{tail}"


def _tz(params: dict[str, Any]) -> tzinfo:
    start = _time(params, "start")
    assert start.tzinfo is not None
    return start.tzinfo  # the time zone the tool was given them in (the assistant's)


def describe_create(params: dict[str, Any]) -> str:
    title = str(params.get("title") or "").strip()
    if not title:
        raise ValueError("the event has no title")
    if len(title) > MAX_TITLE:
        raise ValueError(f"the title is longer than {MAX_TITLE} characters")
    start, end = _span(params)
    people = _attendees(params)
    names = params.get("attendee_names") or people
    who = f" with {', '.join(str(n) for n in names)}" if people else ""
    return f"Create the event '{title}' {span_words(start, end, _tz(params))}{who}"


def describe_move(params: dict[str, Any]) -> str:
    event = _event(params)
    start, end = _span(params)
    shown = params.get("event_title") or event
    return f"Move the event '{shown}' to {span_words(start, end, _tz(params))}"


def describe_cancel(params: dict[str, Any]) -> str:
    return f"Cancel the event '{params.get('event_title') or _event(params)}'"


def _usable(describe: Any, params: dict[str, Any]) -> None:
    try:
        describe(params)
    except ValueError as exc:
        raise ActionFailed(str(exc)) from None


async def _token(services: Services) -> str:
    tokens = OwnerTokens(services.settings, services.db, services.host.instance_id)
    try:
        return await tokens.get()
    except SignInNeeded as exc:
        raise ActionFailed(str(exc)) from None


def _need_feishu(services: Services) -> None:
    if not services.settings.feishu_configured:
        raise ActionFailed("the Feishu app is not configured (MAKA_FEISHU_APP_ID)")


@asynccontextmanager
async def _calendar(services: Services) -> AsyncIterator[OwnerCalendar]:
    """The owner's calendar for one action; Feishu refusing a call fails the action."""
    await _token(services)  # a sign-in needed fails before any call
    async with owner_calendar(services.settings, services.db, lambda: _token(services)) as cal:
        try:
            yield cal
        except FeishuError as exc:
            raise ActionFailed(str(exc)) from None


async def create_event(services: Services, action: Action, key: str) -> str:
    _usable(describe_create, action.params)
    _need_feishu(services)
    start, end = _span(action.params)
    async with _calendar(services) as cal:
        calendar_id = await cal.primary()
        event_id = await cal.create(
            calendar_id, title=str(action.params["title"]), start=start, end=end, key=key
        )
        people = _attendees(action.params)
        if people:
            await cal.invite(calendar_id, event_id, people)
    invited = f" with {len(people)} attendee(s)" if people else ""
    return f"event created: {event_id}{invited}"


async def move_event(services: Services, action: Action, key: str) -> str:
    _usable(describe_move, action.params)
    _need_feishu(services)
    start, end = _span(action.params)
    async with _calendar(services) as cal:
        calendar_id = await cal.primary()
        await cal.move(calendar_id, _event(action.params), start, end)
    return f"event moved: {_event(action.params)} to {span_words(start, end, services.settings.tz)}"


async def cancel_event(services: Services, action: Action, key: str) -> str:
    _usable(describe_cancel, action.params)
    _need_feishu(services)
    async with _calendar(services) as cal:
        calendar_id = await cal.primary()
        gone_now = await cal.cancel(calendar_id, _event(action.params))
    event = _event(action.params)
    return f"event cancelled: {event}" if gone_now else f"event {event} was cancelled already"


def register_calendar_kinds() -> None:
    register_executor(CREATE, create_event, describe=describe_create)
    register_executor(MOVE, move_event, describe=describe_move)
    register_executor(CANCEL, cancel_event, describe=describe_cancel)

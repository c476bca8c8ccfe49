"""Calendar actions as the owner, through the real Bot, the owner's sign-in and the Feishu
fake's calendar: asked to create an event, the owner gets an approval card and nothing exists
before the click; after Approve exactly one event exists (a click delivered twice, a crash
between the create and its record); Reject creates nothing; a standing /allow skips the card;
a group member's request creates nothing by itself; moves and cancels change the event once;
without a sign-in the action fails with "sign in again"."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select

from bot.actions.worker import ActionWorker
from bot.llm.scripted import ScriptedProvider
from storage.models import ApiUsage
from storage.repos import actions as repo
from storage.types import utcnow
from tests.actions.support import actions, click, settled, the_approval_card
from tests.assistant.support import bot_world, quiet, say, say_in_group, send
from tests.assistant.support import sleep as sleep_step
from tests.feishu_world import OWNER, FeishuWorld, WorldFactory
from tests.owner.support import PUBLIC_URL, SECRET_KEY, sign_in

LI = "ou_li_wei"
SYNC = {
    "title": "Sync with Li",
    "start": "2030-01-07T10:00:00",
    "end": "2030-01-07T10:30:00",
    "attendees": LI,
    "reason": "the owner asked for a sync with Li tomorrow",
}


MOVED = {"start": "2030-01-08T09:00:00+00:00", "end": "2030-01-08T09:15:00+00:00"}


def asks_for_event(**params: str) -> list[object]:
    return [send("create_event", {**SYNC, **params}), sleep_step]


@asynccontextmanager
async def calendar_world(
    make_world: WorldFactory, steps: list[object], *, signed_in: bool = True
) -> AsyncIterator[FeishuWorld]:
    provider = ScriptedProvider(steps)
    async with bot_world(make_world, provider, public_url=PUBLIC_URL, secret_key=SECRET_KEY) as w:
        if signed_in:
            assert (await sign_in(w)).status == 200
        yield w


def events(w: FeishuWorld) -> list[Any]:
    return w.fake.live_events(OWNER)


def creates(w: FeishuWorld) -> list[Any]:
    return [
        r
        for r in w.fake.requests
        if r.method == "POST" and r.path.endswith("/events") and "/calendars/" in r.path
    ]


async def test_an_event_waits_for_the_owners_approve_and_is_created_once(
    make_world: WorldFactory,
) -> None:
    async with calendar_world(make_world, asks_for_event()) as w:
        await say(w, "book a sync with Li tomorrow at 10")
        card = await the_approval_card(w)
        assert "Create the event 'Sync with Li' 2030-01-07 10:00–10:30 with ou_li_wei" in (
            card.content
        )
        await quiet(w)
        assert events(w) == [] and creates(w) == []  # nothing before the click

        event = await click(w, card, "Approve")
        status, body = await w.events.post(event)  # the same click, delivered again
        assert status == 200, body
        row = await settled(w, 1, repo.DONE)
        [created] = events(w)
        assert row.result == f"event created: {created.event_id} with 1 attendee(s)"
        assert created.summary == "Sync with Li" and created.attendees == [LI]
        start = datetime.fromisoformat(SYNC["start"]).replace(tzinfo=w.app.services.settings.tz)
        assert created.start == str(int(start.timestamp()))
        assert [r.query["idempotency_key"] for r in creates(w)] == ["maka-action-1"]
        auth = {r.headers["Authorization"] for r in creates(w)}
        assert all(a.startswith("Bearer u-") for a in auth)  # as the owner, not the app


async def test_a_crash_between_the_create_and_its_record_creates_one_event(
    make_world: WorldFactory,
) -> None:
    async with calendar_world(make_world, asks_for_event()) as w:
        services = w.app.services
        await say(w, "book a sync with Li tomorrow at 10")
        await the_approval_card(w)
        crashed = ActionWorker(services, owner="crashed-host", lease=timedelta(milliseconds=300))
        async with services.db.write() as s:  # approved and claimed at once, by a doomed host
            assert await repo.decide(s, 1, to=repo.APPROVED, by=OWNER, now=utcnow())
            [row] = await repo.claim_due(
                s, owner=crashed.owner, now=utcnow(), limit=1, lease=crashed.lease
            )
        state, _ = await crashed.execute(row)  # the event is created...
        assert state == repo.DONE  # ...and the process dies before recording it
        row = await settled(w, 1, repo.DONE)  # the running worker takes the row over
        assert row.attempts == 2  # run twice...
        [created] = events(w)  # ...one event, invited once
        assert created.attendees == [LI]
        assert len(creates(w)) == 2 and len(w.fake.events) == 1


async def test_reject_creates_no_event(make_world: WorldFactory) -> None:
    async with calendar_world(make_world, asks_for_event()) as w:
        await say(w, "book a sync with Li tomorrow at 10")
        card = await the_approval_card(w)
        await click(w, card, "Reject")
        await settled(w, 1, repo.REJECTED)
        await quiet(w)
        assert events(w) == [] and creates(w) == []


async def test_a_standing_allow_skips_the_card(make_world: WorldFactory) -> None:
    async with calendar_world(make_world, asks_for_event()) as w:
        await say(w, "/allow create_event")
        await quiet(w)
        await say(w, "book a sync with Li tomorrow at 10")
        row = await settled(w, 1, repo.DONE)
        assert row.decided_by and row.decided_by.startswith("allow #")
        assert len(events(w)) == 1


async def test_an_events_calls_as_the_owner_count_in_the_api_quota(
    make_world: WorldFactory,
) -> None:
    async with calendar_world(make_world, asks_for_event()) as w:
        await say(w, "/allow create_event")
        await quiet(w)
        await say(w, "book a sync with Li tomorrow at 10")
        await settled(w, 1, repo.DONE)
        async with w.app.services.db.read() as s:  # counted before the action's client closed
            rows = (await s.execute(select(ApiUsage.api, ApiUsage.calls))).all()
        calls = {api: n for api, n in rows}
        assert calls.get("calendar.event.create") == len(creates(w)) == 1
        assert calls.get("calendar.event.attendee.create") == 1


async def test_a_group_members_request_creates_no_event(make_world: WorldFactory) -> None:
    provider_steps = asks_for_event()
    async with calendar_world(make_world, provider_steps) as w:
        await say_in_group(w, "book a sync with Li tomorrow at 10")
        card = await the_approval_card(w)  # it is the owner's to decide
        await click(w, card, "Approve", by="ou_member")  # a forged click does nothing
        await quiet(w)
        [row] = await actions(w)
        assert row.state == repo.PROPOSED and row.requester == "ou_member"
        assert events(w) == [] and creates(w) == []


async def test_without_a_sign_in_an_approved_event_fails_with_sign_in_again(
    make_world: WorldFactory,
) -> None:
    async with calendar_world(make_world, asks_for_event(), signed_in=False) as w:
        await say(w, "book a sync with Li tomorrow at 10")
        card = await the_approval_card(w)
        await click(w, card, "Approve")
        row = await settled(w, 1, repo.FAILED)
        assert row.last_error and row.last_error.startswith("sign in again"), row.last_error
        assert row.attempts == 1  # permanent: no retries
        assert creates(w) == []


async def test_an_event_is_moved_and_cancelled_once(make_world: WorldFactory) -> None:
    steps = [
        send("move_event", {"event": "evt_standup", **MOVED, "reason": "moved"}),
        sleep_step,
        send("cancel_event", {"event": "evt_standup", "reason": "not needed"}),
        sleep_step,
    ]
    async with calendar_world(make_world, steps) as w:
        event = w.fake.put_event(
            OWNER, "Standup", 1_893_900_000, 1_893_901_800, event_id="evt_standup"
        )
        await say(w, "/allow move_event")
        await say(w, "/allow cancel_event")
        await quiet(w)
        await say(w, "move the standup")
        row = await settled(w, 1, repo.DONE)
        moved = datetime.fromisoformat(MOVED["start"])
        assert event.start == str(int(moved.timestamp())) and not event.deleted
        assert row.summary == "Move the event 'evt_standup' to 2030-01-08 09:00–09:15"
        await say(w, "cancel the standup")
        row = await settled(w, 2, repo.DONE)
        assert event.deleted and row.result == "event cancelled: evt_standup"


async def test_a_cancel_run_again_after_a_crash_is_done(make_world: WorldFactory) -> None:
    steps = [send("cancel_event", {"event": "evt_standup", "reason": "not needed"}), sleep_step]
    async with calendar_world(make_world, steps) as w:
        w.fake.put_event(OWNER, "Standup", 1_893_900_000, 1_893_901_800, event_id="evt_standup")
        await say(w, "cancel the standup")
        card = await the_approval_card(w)
        w.fake.delete_event("evt_standup")  # the first run's delete, whose record was lost
        await click(w, card, "Approve")
        row = await settled(w, 1, repo.DONE)
        assert row.result == "event evt_standup was cancelled already"

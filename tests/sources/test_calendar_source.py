"""The owner's calendar as a source, read as the owner through the Feishu fake: synced events
are found in the owner's DM and not in a group until the owner shares the calendar there; a
moved event is found at its new time and not at its old; a cancelled one is gone; without a
sign-in the source shows "sign in again"."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

from sqlalchemy import select

from bot.llm.scripted import ScriptedProvider
from bot.memory.source_index import document_id
from sources.feishu.calendar import SCOPE, UNIT
from storage.models import ApiUsage, SourceRecord
from storage.repos.source_records import is_tombstone
from tests.actions.support import the_approval_card
from tests.assistant.support import answers_sent, bot_world, quiet, say, say_in_group, send
from tests.assistant.support import sleep as sleep_step
from tests.feishu_world import OWNER, FeishuWorld, WorldFactory
from tests.owner.support import PUBLIC_URL, SECRET_KEY, sign_in
from tests.security.test_action_approvals import tool_results
from tests.sources.test_app import request, source_row
from tests.waiting import wait_until

MARK = "qplanmarker"
TEN = int(datetime(2030, 1, 7, 2, 0, tzinfo=UTC).timestamp())  # 10:00 in Asia/Shanghai
HOUR = 3600


@asynccontextmanager
async def calendar_world(
    make_world: WorldFactory, *, signed_in: bool = True, steps: list[object] | None = None
) -> AsyncIterator[FeishuWorld]:
    async with bot_world(
        make_world,
        ScriptedProvider(steps or []),
        public_url=PUBLIC_URL,
        secret_key=SECRET_KEY,
        sync_calendar_interval=0,
        timezone="Asia/Shanghai",
    ) as w:
        if signed_in:
            assert (await sign_in(w)).status == 200
        yield w


async def sync_calendar(w: FeishuWorld) -> None:
    """Observe the calendar (its unit is then asked for) and wait for the unit's sync."""
    before = await source_row(w.app.services.db, UNIT)
    done_before = before.last_success_at if before is not None else None
    await request(w, "calendar")

    async def synced() -> bool:
        row = await source_row(w.app.services.db, UNIT)
        return bool(
            row is not None
            and row.last_success_at is not None
            and row.last_success_at != done_before
            and row.wanted_at is None
            and row.lease_owner is None
        )

    await wait_until(synced, what="the owner's calendar synced")


async def live(w: FeishuWorld) -> list[SourceRecord]:
    async with w.app.services.db.read() as s:
        rows = await s.scalars(select(SourceRecord).where(SourceRecord.source == UNIT))
        return [r for r in rows.all() if not is_tombstone(r.payload)]


async def answer(w: FeishuWorld, chat_id: str) -> str:
    """The bot's last answer in a chat (text, rich text or card), once the world is quiet."""
    await quiet(w)
    said = [m.text or m.content for m in answers_sent(w) if m.chat_id == chat_id]
    assert said, f"no answer in {chat_id}"
    return said[-1].lower()


async def hits(w: FeishuWorld, query: str) -> list[str]:
    return [h.id for h in await w.app.services.search.search(query)]


async def indexed(w: FeishuWorld, query: str, *, containing: str = "") -> None:
    """The search finds exactly the live records (the current versions), each with
    `containing` in its text: no old version is found."""

    async def done() -> bool:
        now = await live(w)
        if not all(containing in r.text for r in now):
            return False
        return sorted(await hits(w, query)) == sorted(document_id(UNIT, r.external_id) for r in now)

    await wait_until(done, what=f"the search to find what is live for {query!r}")


async def test_synced_events_are_found_in_the_owners_dm_and_in_a_group_only_once_shared(
    make_world: WorldFactory,
) -> None:
    async with calendar_world(make_world) as w:
        w.fake.user_names["ou_li"] = "Li Wei"
        w.fake.put_event(
            OWNER,
            f"Quarterly planning {MARK}",
            TEN,
            TEN + HOUR,
            location="Room 5",
            attendees=["ou_li"],
            description="Bring the numbers",
        )
        await sync_calendar(w)
        [record] = await live(w)
        assert record.scope == SCOPE
        assert record.text.startswith(f"Calendar event: Quarterly planning {MARK}")
        assert record.text.splitlines()[1:] == [
            "When: 2030-01-07 10:00–11:00 (CST)",
            "Where: Room 5",
            "With: Li Wei",
            "Bring the numbers",
        ]
        await indexed(w, MARK)

        await say(w, f"/search {MARK}")
        assert "quarterly planning" in await answer(w, "oc_owner_dm")
        await say_in_group(w, f"/search {MARK}", sender=OWNER)
        assert await answer(w, "oc_group") == f"nothing found for {MARK!r}."
        await say_in_group(w, f"/sync share {UNIT}", sender=OWNER)
        await quiet(w)
        await say_in_group(w, f"/search {MARK}", sender=OWNER)
        assert "quarterly planning" in await answer(w, "oc_group")


async def test_a_moved_event_is_found_at_its_new_time_and_a_cancelled_one_is_gone(
    make_world: WorldFactory,
) -> None:
    async with calendar_world(make_world) as w:
        event = w.fake.put_event(OWNER, f"Design review {MARK}", TEN, TEN + HOUR)
        await sync_calendar(w)
        await indexed(w, MARK, containing="2030-01-07 10:00")

        w.fake.move_event(event.event_id, TEN + 4 * HOUR, TEN + 5 * HOUR)
        await sync_calendar(w)
        [record] = await live(w)
        assert "When: 2030-01-07 14:00–15:00" in record.text
        assert len(await hits(w, MARK)) <= 1
        await indexed(w, MARK, containing="2030-01-07 14:00")  # the old time is not found

        w.fake.move_event(event.event_id, TEN, TEN + HOUR)  # moved back: found again
        await sync_calendar(w)
        await indexed(w, MARK, containing="2030-01-07 10:00")

        w.fake.delete_event(event.event_id)
        await sync_calendar(w)
        assert await live(w) == []
        await indexed(w, MARK)
        assert await hits(w, MARK) == []


async def counted(w: FeishuWorld, api: str) -> int:
    async with w.app.services.db.read() as s:
        calls = await s.scalars(
            select(ApiUsage.calls).where(ApiUsage.platform == "feishu", ApiUsage.api == api)
        )
        return sum(calls.all())


async def test_the_calendars_calls_as_the_owner_count_in_the_api_quota(
    make_world: WorldFactory,
) -> None:
    async with calendar_world(make_world) as w:
        w.fake.put_event(OWNER, f"Budget {MARK}", TEN, TEN + HOUR, attendees=["ou_li"])
        await sync_calendar(w)
        lists = [r for r in w.fake.requests if r.path.endswith("/events")]
        assert lists and all(r.headers["Authorization"].startswith("Bearer u-") for r in lists)

        async def all_counted() -> bool:
            return (
                await counted(w, "calendar.primary") >= 1
                and await counted(w, "calendar.event.list") >= 1
                and await counted(w, "calendar.event.attendee.list") >= 1
            )

        await wait_until(all_counted, what="the calendar's calls counted in api_usage")


async def test_without_a_sign_in_the_calendar_says_sign_in_again(
    make_world: WorldFactory,
) -> None:
    async with calendar_world(make_world, signed_in=False) as w:
        await request(w, "calendar")

        async def failed() -> bool:
            row = await source_row(w.app.services.db, "calendar")
            return bool(row is not None and row.last_error and row.lease_owner is None)

        await wait_until(failed, what="the calendar's error")
        row = await source_row(w.app.services.db, "calendar")
        assert row is not None and row.last_error is not None
        assert row.last_error.startswith("sign in again"), row.last_error
        assert not [r for r in w.fake.requests if "/calendar/" in r.path]  # no call, no storm


async def test_a_move_asked_in_the_owners_dm_names_the_synced_event_on_the_card(
    make_world: WorldFactory,
) -> None:
    moved = {"start": "2030-01-07T15:00", "end": "2030-01-07T16:00", "reason": "clash"}
    steps = [send("move_event", {"event": "evt_review", **moved}), sleep_step]
    async with calendar_world(make_world, steps=steps) as w:
        w.fake.put_event(OWNER, "Design review", TEN, TEN + HOUR, event_id="evt_review")
        await sync_calendar(w)
        await say(w, "move the design review to 3pm")
        card = await the_approval_card(w)
        assert "Move the event 'Design review' to 2030-01-07 15:00–16:00" in card.content


async def test_a_group_members_move_learns_no_title_of_the_owners_event(
    make_world: WorldFactory,
) -> None:
    moved = {"start": "2030-01-07T15:00", "end": "2030-01-07T16:00", "reason": "clash"}
    provider = ScriptedProvider([send("move_event", {"event": "evt_review", **moved}), sleep_step])
    async with bot_world(
        make_world, provider, public_url=PUBLIC_URL, secret_key=SECRET_KEY, sync_calendar_interval=0
    ) as w:
        assert (await sign_in(w)).status == 200
        w.fake.put_event(OWNER, f"Secret review {MARK}", TEN, TEN + HOUR, event_id="evt_review")
        await sync_calendar(w)
        await say_in_group(w, "move the review to 3pm")
        card = await the_approval_card(w)  # the owner decides, and sees only the id
        await quiet(w)
        said = tool_results(provider, "move_event")
        assert said and all(MARK not in line for line in said), said
        assert MARK not in card.content

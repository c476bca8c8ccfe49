"""The owner's calendar and tasks feed the pre-check: an event starting soon or an open task
due soon makes an otherwise idle heartbeat run a round that names it; a far event, a
cancelled one and a completed task leave the heartbeat idle (no model call). The records are
the sources' own (sources/feishu/calendar.py `event_record`, sources/feishu/tasks.py),
committed as the sync commits a page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sources.base import Removal
from sources.feishu.calendar import SCOPE as CALENDAR_SCOPE
from sources.feishu.calendar import UNIT as CALENDAR_UNIT
from sources.feishu.calendar import event_record
from sources.feishu.tasks import OwnerTasks
from storage.db import Database
from storage.repos import source_records as source_repo
from storage.repos.source_records import NewRecord
from tests.discovery.support import MORNING, DiscoveryWorld, end_pass

HALF_HOUR = timedelta(minutes=30)


async def commit(w: DiscoveryWorld, records: list[NewRecord], removed: list[Removal]) -> None:
    """What the sync runner does with a page: removals first, then the new versions."""
    async with w.db.write() as s:
        for r in removed:
            await source_repo.remove_message(s, r.source, r.item, scope=r.scope, now=MORNING,
                                             keep=r.keep)  # fmt: skip
        await source_repo.insert_records(s, records, MORNING)


async def put_event(w: DiscoveryWorld, event_id: str, summary: str, start: datetime) -> int:
    event = {
        "event_id": event_id,
        "summary": summary,
        "start_time": {"timestamp": str(int(start.timestamp()))},
        "end_time": {"timestamp": str(int((start + HALF_HOUR).timestamp()))},
        "attendees": [],
    }
    record = event_record(event, UTC)
    await commit(
        w, [record], [Removal(CALENDAR_UNIT, event_id, CALENDAR_SCOPE, record.external_id)]
    )
    return await newest(w)


async def cancel_event(w: DiscoveryWorld, event_id: str) -> None:
    await commit(w, [], [Removal(CALENDAR_UNIT, event_id, CALENDAR_SCOPE)])


async def put_task(
    w: DiscoveryWorld, guid: str, summary: str, due: datetime, done: datetime | None = None
) -> None:
    ms = lambda t: str(int(t.timestamp() * 1000))  # noqa: E731
    task = {
        "guid": guid,
        "summary": summary,
        "due": {"timestamp": ms(due)},
        "completed_at": ms(done) if done else "0",
        "updated_at": ms(MORNING),
    }
    await commit(w, [OwnerTasks._record(task)], [])


async def newest(w: DiscoveryWorld) -> int:
    async with w.db.read() as s:
        return await source_repo.max_seq(s)


async def a_quiet_first_round(w: DiscoveryWorld) -> None:
    w.discovery.add(end_pass())
    w.judgement.add(end_pass())
    assert (await w.beat(MORNING)).did == "round"


def briefings(w: DiscoveryWorld) -> tuple[str, str]:
    return (
        w.discovery.requests[-1][0][1].content or "",
        w.judgement.requests[-1][0][1].content or "",
    )


async def test_an_event_starting_in_half_an_hour_makes_an_idle_heartbeat_run_a_round_naming_it(
    db: Database, tmp_path: Path
) -> None:
    w = DiscoveryWorld(db, tmp_path)
    await a_quiet_first_round(w)
    later = MORNING + timedelta(hours=3)
    assert (await w.beat(later)).reason == "nothing new since the last round"

    # The sync brings an event, and a later beat finds it starting in 30 minutes. (The
    # record is new too: the round's reason names both, and the event's reason alone would
    # do, as the next test shows.)
    seq = await put_event(w, "evt_budget", "Budget review with Li", later + 2 * HALF_HOUR)
    w.discovery.add(end_pass())
    w.judgement.add(end_pass())
    beat = await w.beat(later + HALF_HOUR)
    assert beat.did == "round", beat
    assert "calendar events or tasks coming up" in beat.reason
    for briefing in briefings(w):
        assert "Budget review with Li" in briefing and f"rec-{seq}" in briefing, briefing
        assert "starts 2026-12-01 13:00" in briefing, briefing

    # Known now: the next beat, the event still ahead, has nothing new.
    assert (await w.beat(later + 2 * HALF_HOUR)).did == "skipped"


async def test_a_far_event_a_cancelled_one_and_a_completed_task_leave_the_heartbeat_idle(
    db: Database, tmp_path: Path
) -> None:
    w = DiscoveryWorld(db, tmp_path)
    # Already synced before the first round: the first round saw them all as records.
    await put_event(w, "evt_far", "Offsite", MORNING + timedelta(days=5))
    await put_event(w, "evt_off", "Cancelled sync", MORNING + timedelta(hours=4))
    await put_task(w, "t_done", "Send budget", MORNING + timedelta(hours=5),
                   done=MORNING - timedelta(hours=1))  # fmt: skip
    await put_task(w, "t_far", "Plan next year", MORNING + timedelta(days=9))
    await cancel_event(w, "evt_off")
    await a_quiet_first_round(w)
    discovery_calls = len(w.discovery.requests)
    assert "Offsite" not in briefings(w)[0] and "Send budget" not in briefings(w)[0]

    # A day passes: the far event and task stay beyond 48 hours, the others are over.
    beats = [await w.beat(MORNING + HALF_HOUR * i) for i in range(1, 48)]
    assert {b.did for b in beats} == {"skipped"}, {b.reason for b in beats}
    assert len(w.discovery.requests) == discovery_calls

    # An open task due this afternoon is news: a round that names it (and not the others).
    now = MORNING + HALF_HOUR * 48
    await put_task(w, "t_open", "Order the projector", now + timedelta(hours=3))
    async with w.db.write() as s:  # its record alone would be news too: count it as seen
        state = await w.state()
        mark = dict(state.watermark or {})
        mark["records"] = await source_repo.max_seq(s)
    await w.change_state(watermark=mark)
    w.discovery.add(end_pass())
    w.judgement.add(end_pass())
    beat = await w.beat(now)
    assert (beat.did, beat.reason) == ("round", "new: calendar events or tasks coming up")
    discovery_briefing = briefings(w)[0]
    assert "task 'Order the projector' due" in discovery_briefing, discovery_briefing
    assert "Send budget" not in discovery_briefing and "Cancelled sync" not in discovery_briefing

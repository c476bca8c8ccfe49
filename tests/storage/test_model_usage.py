"""The status page's model usage per day: summed by quarter hour in the database, which adds
up to the days of any time zone, Kathmandu's +5:45 included."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from storage.db import Database
from storage.models import ModelCall
from storage.repos import model_calls
from storage.repos.model_calls import QuarterUsage

KATHMANDU = ZoneInfo("Asia/Kathmandu")  # UTC+5:45
LOCAL_MIDNIGHT = datetime(2026, 12, 5, 0, 0, tzinfo=KATHMANDU)  # 2026-12-04 18:15 UTC


async def _calls(db: Database, *made: tuple[datetime, str, int]) -> None:
    async with db.write() as tx:
        for at, purpose, tokens in made:
            tx.add(
                ModelCall(
                    purpose=purpose,
                    model="m",
                    input_tokens=tokens,
                    output_tokens=1,
                    latency_ms=5,
                    created_at=at,
                )
            )


async def test_calls_are_summed_by_quarter_hour_and_purpose_on_both_sides_of_a_local_midnight(
    db: Database,
) -> None:
    just_before = LOCAL_MIDNIGHT - timedelta(milliseconds=400)  # 23:59:59.6 the day before
    await _calls(
        db,
        (LOCAL_MIDNIGHT - timedelta(hours=2), "bot_turn", 999),  # before `since`: not counted
        (just_before, "bot_turn", 10),
        (just_before - timedelta(minutes=5), "bot_turn", 20),
        (LOCAL_MIDNIGHT, "bot_turn", 100),
        (LOCAL_MIDNIGHT + timedelta(minutes=14), "bot_turn", 200),
        (LOCAL_MIDNIGHT + timedelta(minutes=14), "matter_turn", 300),
    )
    since = LOCAL_MIDNIGHT - timedelta(minutes=15)
    async with db.read() as tx:
        quarters = await model_calls.usage_by_quarter_hour(tx, since)
    evening = LOCAL_MIDNIGHT.astimezone(UTC) - timedelta(minutes=15)
    assert sorted(quarters, key=lambda q: (q.start, q.purpose)) == [
        QuarterUsage(evening, "bot_turn", 10 + 1 + 20 + 1, 2),
        QuarterUsage(LOCAL_MIDNIGHT.astimezone(UTC), "bot_turn", 100 + 1 + 200 + 1, 2),
        QuarterUsage(LOCAL_MIDNIGHT.astimezone(UTC), "matter_turn", 300 + 1, 1),
    ]
    days = {q.start.astimezone(KATHMANDU).date() for q in quarters}
    assert days == {LOCAL_MIDNIGHT.date() - timedelta(days=1), LOCAL_MIDNIGHT.date()}

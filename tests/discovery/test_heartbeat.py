"""The heartbeat's pre-check (scripted model, both databases): a day of idle beats makes no
model call, quiet hours and the daily budget hold, and each skip is recorded with its
reason."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from storage.db import Database
from storage.models import ModelCall
from storage.repos import model_calls
from tests.discovery.support import MORNING, DiscoveryWorld, end_pass

HALF_HOUR = timedelta(minutes=30)


async def a_quiet_first_round(w: DiscoveryWorld) -> None:
    """The first beat sees everything as new: one round that notes and finds nothing."""
    w.discovery.add(end_pass())
    w.judgement.add(end_pass())
    first = await w.beat(MORNING)
    assert first.did == "round" and first.round is not None and first.round.phase == "done"


async def test_a_day_of_heartbeats_with_nothing_new_makes_no_model_call(
    db: Database, tmp_path: Path
) -> None:
    w = DiscoveryWorld(db, tmp_path)
    await w.add_record("Li: the vendor list is attached", MORNING - timedelta(hours=1))
    await a_quiet_first_round(w)
    after_first = w.calls
    beats = [await w.beat(MORNING + HALF_HOUR * i) for i in range(1, 49)]
    assert w.calls == after_first == 2
    assert {b.did for b in beats} == {"skipped"}
    assert {b.reason for b in beats} == {"nothing new since the last round"}
    skips = await w.rounds("skipped")
    assert len(skips) == 48 and skips[-1].reason == "nothing new since the last round"
    # A beat before the interval has passed is not a heartbeat at all.
    assert (await w.beat(MORNING + HALF_HOUR * 48 + timedelta(minutes=1))).did == "idle"

    # Something new: the next beat runs a round, and says why.
    await w.add_record("Li: I will send the budget by Friday", MORNING + timedelta(hours=25))
    w.discovery.add(end_pass())
    w.judgement.add(end_pass())
    beat = await w.beat(MORNING + HALF_HOUR * 50)
    assert beat.did == "round" and beat.reason == "new: new messages or mail"


async def test_quiet_hours_hold_the_round_until_they_end(db: Database, tmp_path: Path) -> None:
    w = DiscoveryWorld(db, tmp_path)
    await w.change_state(quiet_from=22, quiet_to=8)  # UTC is the owner's zone here
    await w.add_record("Li: can you review the contract tonight?", MORNING)
    night = MORNING.replace(hour=23)
    skipped = await w.beat(night)
    assert (skipped.did, skipped.reason) == ("skipped", "quiet hours")
    assert (await w.beat(night + timedelta(hours=8, minutes=30))).reason == "quiet hours"  # 07:30
    assert w.calls == 0
    await a_quiet_first_round_at(w, night + timedelta(hours=9))  # 08:00, quiet hours over


async def a_quiet_first_round_at(w: DiscoveryWorld, when: object) -> None:
    w.discovery.add(end_pass())
    w.judgement.add(end_pass())
    beat = await w.beat(when)  # type: ignore[arg-type]
    assert beat.did == "round", beat


async def test_the_daily_budget_stops_rounds_until_the_owners_next_day(
    db: Database, tmp_path: Path
) -> None:
    w = DiscoveryWorld(db, tmp_path)
    await w.change_state(budget_tokens=1000)
    async with db.write() as s:  # earlier rounds today used the budget up
        await model_calls.insert(
            s, ModelCall(purpose="judgement_turn", model="m", input_tokens=900, output_tokens=150,
                         latency_ms=1, created_at=MORNING - timedelta(hours=2)),
        )  # fmt: skip
        await model_calls.insert(  # the Bot's own calls do not count against discovery
            s, ModelCall(purpose="bot_turn", model="m", input_tokens=90_000, output_tokens=0,
                         latency_ms=1, created_at=MORNING + timedelta(hours=20)),
        )  # fmt: skip
    await w.add_record("Li: the launch moved", MORNING)
    spent = await w.beat(MORNING)
    assert (spent.did, spent.reason) == ("skipped", "daily budget spent (1050 of 1000 tokens)")
    assert w.calls == 0
    await a_quiet_first_round_at(w, MORNING.replace(hour=0) + timedelta(days=1))


async def test_run_now_passes_quiet_hours_but_not_the_budget_and_is_answered_once(
    db: Database, tmp_path: Path
) -> None:
    w = DiscoveryWorld(db, tmp_path)
    await w.add_record("Li: hello", MORNING)
    await a_quiet_first_round(w)
    night = MORNING.replace(hour=23)
    await w.change_state(quiet_from=22, quiet_to=8, run_requested=True)
    await a_quiet_first_round_at(w, night)  # asked for: quiet hours do not hold it
    assert (await w.state()).run_requested is False

    await w.change_state(budget_tokens=1, run_requested=True)
    spent = await w.beat(night + timedelta(minutes=1))
    assert spent.did == "skipped" and spent.reason.startswith("daily budget spent")
    # The request was answered by that skip: the next poll is not another beat.
    assert (await w.beat(night + timedelta(minutes=1, seconds=1))).did == "idle"
    assert len(await w.rounds("skipped")) == 1

"""Invariants 5 and 6: which Sessions are candidates, in what order, under which set id."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.workhub.candidates import (
    Evidence,
    SessionMeta,
    build_set,
    candidate_set_id,
    select_candidates,
)

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def meta(i: int, minutes_ago: float, **kw: object) -> SessionMeta:
    values: dict[str, object] = {
        "id": f"s{i:02d}",
        "name": f"task {i}",
        "workspace": "infra",
        "state": "active",
        "created_at": NOW - timedelta(days=30),
        "last_message_at": NOW - timedelta(minutes=minutes_ago),
    }
    values.update(kw)
    return SessionMeta(**values)  # type: ignore[arg-type]


def test_activity_falls_back_from_last_message_to_status_to_creation_and_ties_go_by_id() -> None:
    a = meta(3, 10)
    b = meta(1, 0, last_message_at=None, status_updated_at=NOW - timedelta(minutes=5))
    c = meta(
        2, 0, last_message_at=None, status_updated_at=None, created_at=NOW - timedelta(minutes=1)
    )
    tie_high, tie_low = meta(9, 30), meta(8, 30)
    ordered = select_candidates([a, b, c, tie_high, tie_low])
    assert [s.id for s in ordered] == ["s02", "s01", "s03", "s08", "s09"]


def test_the_33rd_is_never_present_and_ineligible_sessions_never_count() -> None:
    eligible = [meta(i, i) for i in range(40)]
    ineligible = [
        meta(50, 0, is_archived=True),
        meta(51, 0, role="coordination"),
        meta(52, 0, subagent_parent="s01"),
        meta(53, 0, labels=("mode:side_conversation",)),
    ]
    ordered = select_candidates(eligible + ineligible)
    assert len(ordered) == 32
    assert [s.id for s in ordered] == [f"s{i:02d}" for i in range(32)]
    assert "s32" not in {s.id for s in ordered}


def test_set_id_ignores_summaries_and_scores_but_not_a_rename() -> None:
    sessions = [meta(i, i) for i in range(5)]
    plain = build_set(sessions, now=NOW, tz=UTC)
    enriched = build_set(
        sessions,
        now=NOW,
        tz=UTC,
        summaries={"s01": "new summary"},
        evidence={"s02": Evidence(0.7, ("x",))},
        evidence_status="ok",
    )
    renamed = build_set([meta(0, 0, name="renamed"), *sessions[1:]], now=NOW, tz=UTC)
    assert plain.set_id == enriched.set_id
    assert renamed.set_id != plain.set_id
    assert candidate_set_id(select_candidates(sessions)) == plain.set_id


def test_refs_are_opaque_and_belong_to_one_set() -> None:
    sessions = [meta(i, i) for i in range(3)]
    first = build_set(sessions, now=NOW, tz=UTC)
    later = build_set([meta(0, 0, state="blocked"), *sessions[1:]], now=NOW, tz=UTC)
    assert all(c.meta.id not in c.ref for c in first.candidates)
    assert first.candidates[1].ref != later.candidates[1].ref
    assert later.by_ref(first.candidates[1].ref) is None


def test_recency_buckets_and_positions() -> None:
    sessions = [meta(1, 60), meta(2, 60 * 24 * 3), meta(3, 60 * 24 * 20)]
    cset = build_set(sessions, now=NOW, tz=UTC)
    assert [(c.position, c.recency) for c in cset.candidates] == [
        (1, "today"),
        (2, "this week"),
        (3, "older"),
    ]

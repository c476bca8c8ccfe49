"""Shared machinery of the recall-benchmark generators (``make_recall_cases*.py``).

A generator writes its hand-made snapshots, filler pool and per-dataset constants, describes
them in a :class:`Dataset` and calls :func:`generate`, which builds every snapshot from a seeded
RNG, re-verifies every expectation against the JSON it is about to write and writes it.

The rules checked here are the router's: a session is eligible when it is not archived, has no
role, no subagent parent and no ``mode:side_conversation`` label; eligible sessions are ordered
by ``last_message_at ?? status_updated_at ?? created_at`` descending (ties by id), and the first
``WINDOW`` are the candidates.

The generators import this module as ``recall_kit``: running ``.venv/bin/python
tests/data/make_recall_cases.py`` puts ``tests/data`` on ``sys.path``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

SCHEMA = "maka.recall-eval.v1"
WINDOW = 32
SIDE_LABEL = "mode:side_conversation"

# Tags every dataset of the schema may use; a dataset can add its own.
BASE_TAGS = frozenset(
    {
        "similar_names",
        "stale_summary",
        "repetitive_logs",
        "mixed_zh_en",
        "identifiers",
        "reference_only",
        "no_match",
        "explicit_new",
        "position_33",
        "ineligible",
        "recency",
    }
)

# Filler pool entry: (workspace, name, summary | None, messages)
Filler = tuple[str, str, str | None, list[tuple[str, str]]]


def ago(d: float = 0, h: float = 0, m: float = 0) -> timedelta:
    return timedelta(days=d, hours=h, minutes=m)


# --------------------------------------------------------------------------------------
# Specs
# --------------------------------------------------------------------------------------


@dataclass
class Spec:
    """A session as written by hand (or drawn from the filler pool).

    ``age`` is the age (relative to the snapshot's ``now``) of the field that drives the
    ordering: ``last_message_at`` when there are messages, else ``status_updated_at`` when
    ``activity == "status"``, else ``created_at``.
    Messages are ``(role, text)`` or ``(role, text, gap_seconds_since_previous_message)``.
    """

    key: str
    name: str
    workspace: str
    age: timedelta
    summary: str | None = None
    messages: list[tuple] = field(default_factory=list)
    state: str = "active"
    role: str | None = None
    archived: bool = False
    parent: str | None = None  # key of the parent session (subagents)
    labels: list[str] = field(default_factory=list)
    pace: float = 300.0  # mean seconds between chat messages
    activity: str = "messages"  # "messages" | "status" | "created"


@dataclass
class Case:
    request: str
    expect: str  # "existing" | "new" | "clarify"
    tags: list[str]
    check: str
    target: str | None = None  # spec key for "existing"
    keys: tuple[str, ...] = ()
    layer: str | None = None  # "name" | "summary" | "evidence" (existing cases)
    other: str | None = None  # spec key of the older session (recency)
    position: int | None = None


# A snapshot function returns (snapshot id, now, hand-written specs, cases, filler settings).
SnapshotFn = Callable[[random.Random], tuple[str, datetime, list[Spec], list[Case], dict]]
# An extra per-case check of a dataset: (case, target session or None, where) -> None.
ExtraCheck = Callable[[Case, dict | None, str], None]


@dataclass(frozen=True)
class Dataset:
    """What a generator contributes; everything else is shared."""

    out: Path
    seed: int
    snapshots: list[SnapshotFn]
    short: dict[str, str]  # snapshot id -> short prefix of its case ids
    allowed_tags: frozenset[str]
    ws_slug: dict[str, str]  # workspace -> slug used in session ids
    fillers: list[Filler]
    min_cases: int
    max_snapshots: int
    completion_count: bool = False  # write ``completion_count`` on summarized sessions
    extra_check: ExtraCheck | None = None


# --------------------------------------------------------------------------------------
# Message helpers
# --------------------------------------------------------------------------------------


def chunk(lines: list[str], size: int, gap: float) -> list[tuple]:
    return [("tool", "\n".join(lines[i : i + size]), gap) for i in range(0, len(lines), size)]


def per_line(lines: list[str], gap: float) -> list[tuple]:
    return [("tool", line, gap) for line in lines]


# --------------------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------------------


def iso(t: datetime) -> str:
    return t.isoformat(timespec="seconds")


def has_cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def filler_specs(
    rng: random.Random, fillers: list[Filler], fill: dict, n: int, taken: set[str]
) -> list[Spec]:
    workspaces = fill["workspaces"]
    pool = [f for f in fillers if f[0] in workspaces and f[1] not in taken]
    if fill.get("english_only"):
        pool = [f for f in pool if not has_cjk(" ".join([f[1], f[2] or "", *(m[1] for m in f[3])]))]
    assert len(pool) >= n, (sorted(workspaces), len(pool), n)
    chosen = rng.sample(pool, n)
    return [
        Spec(f"filler{i:02d}", name, ws, ago(), summary=summary, messages=list(msgs))
        for i, (ws, name, summary, msgs) in enumerate(chosen)
    ]


def pick_state(rng: random.Random, age: timedelta) -> str:
    if age < ago(d=1):
        return rng.choices(["active", "running", "waiting_for_user", "blocked"], [5, 2, 3, 1])[0]
    if age < ago(d=7):
        return rng.choices(["active", "waiting_for_user", "blocked", "aborted"], [5, 3, 1, 1])[0]
    return rng.choices(["active", "waiting_for_user", "aborted"], [5, 2, 2])[0]


def assign_filler_ages(rng: random.Random, fillers: list[Spec], fill: dict) -> None:
    ages: list[timedelta] = []
    for _ in range(fill["n_today"]):
        lo = fill.get("today_min", ago(m=10)).total_seconds()
        ages.append(timedelta(seconds=rng.uniform(lo, 9 * 3600)))
    for _ in range(fill["n_week"]):
        lo = fill.get("week_min", ago(d=1)).total_seconds()
        ages.append(timedelta(seconds=rng.uniform(lo, 6.5 * 86400)))
    lo, hi = fill["old_range"]
    for _ in range(fill["n_old"]):
        ages.append(timedelta(seconds=rng.uniform(lo.total_seconds(), hi.total_seconds())))
    rng.shuffle(ages)
    for spec, age in zip(fillers, ages, strict=True):
        spec.age = age
        spec.state = pick_state(rng, age)
        if spec.summary is not None and rng.random() < 0.12:
            spec.summary = None


def build_session(
    spec: Spec,
    now: datetime,
    rng: random.Random,
    ids: dict[str, str],
    completion_count: bool = False,
) -> dict:
    t_key = now - spec.age
    messages = []
    last_message_at = None
    if spec.messages:
        times = []
        t = t_key
        for m in reversed(spec.messages):
            times.append(t)
            gap = m[2] if len(m) > 2 else spec.pace * rng.uniform(0.3, 1.7)
            t = t - timedelta(seconds=round(gap))
        times.reverse()
        messages = [
            {"role": m[0], "text": m[1], "at": iso(at)}
            for m, at in zip(spec.messages, times, strict=True)
        ]
        last_message_at = iso(t_key)
        created = times[0] - timedelta(seconds=rng.randint(20, 900))
        if rng.random() < 0.2:
            status = None
        elif spec.state in ("waiting_for_user", "blocked", "aborted"):
            status = t_key + timedelta(seconds=rng.randint(2, 90))
            status = min(status, now)
        else:
            status = created + (t_key - created) * rng.uniform(0.0, 0.5)
    elif spec.activity == "status":
        status = t_key
        created = t_key - timedelta(seconds=rng.randint(3600, 3 * 86400))
    else:
        status = None
        created = t_key
    session = {
        "id": ids[spec.key],
        "name": spec.name,
        "workspace": spec.workspace,
        "state": spec.state,
        "role": spec.role,
        "is_archived": spec.archived,
        "subagent_parent": ids[spec.parent] if spec.parent else None,
        "labels": list(spec.labels),
        "created_at": iso(created),
        "status_updated_at": iso(status) if status else None,
        "last_message_at": last_message_at,
        "summary": spec.summary,
        "messages": messages,
    }
    if completion_count and spec.summary:
        # Completed turns: one per assistant reply (a summary exists, so at least one).
        session["completion_count"] = max(1, sum(1 for m in spec.messages if m[0] == "assistant"))
    return session


def assign_ids(specs: list[Spec], ws_slug: dict[str, str]) -> dict[str, str]:
    order = sorted(specs, key=lambda s: (-s.age.total_seconds(), s.key))  # oldest first
    counters: dict[str, int] = {}
    ids = {}
    for s in order:
        slug = ws_slug.get(s.workspace, s.workspace)
        counters[slug] = counters.get(slug, 0) + 1
        ids[s.key] = f"s-{slug}-{counters[slug]:02d}"
    return ids


def build_snapshot(fn: SnapshotFn, rng: random.Random, ds: Dataset):
    sid, now, specs, cases, fill = fn(rng)
    taken = {s.name for s in specs}
    if "ranked" in fill:
        ranked: dict[int, Spec] = fill["ranked"]
        n_fill = fill["n_eligible"] - len(ranked)
        fillers = filler_specs(rng, ds.fillers, fill, n_fill, taken)
        it = iter(fillers)
        order = [ranked.get(p) or next(it) for p in range(1, fill["n_eligible"] + 1)]
        age = ranked[1].age
        for pos, spec in enumerate(order, start=1):
            if pos == 2:
                age = ago(h=19)
            elif pos > 2:
                step = rng.uniform(4, 14) * 3600 if pos <= 34 else rng.uniform(2, 6) * 86400
                age = age + timedelta(seconds=step)
            spec.age = age
            if spec.key.startswith("filler"):
                spec.state = pick_state(rng, age)
        specs = [*order, *fill["ineligible"]]
    else:
        n_fill = fill["n_today"] + fill["n_week"] + fill["n_old"]
        fillers = filler_specs(rng, ds.fillers, fill, n_fill, taken)
        assign_filler_ages(rng, fillers, fill)
        specs = [*specs, *fillers]
    ids = assign_ids(specs, ds.ws_slug)
    sessions = [build_session(s, now, rng, ids, ds.completion_count) for s in specs]
    rng.shuffle(sessions)
    return sid, now, sessions, cases, ids


# --------------------------------------------------------------------------------------
# Verification (independent re-computation of the rules from the JSON itself)
# --------------------------------------------------------------------------------------


def eligible(s: dict) -> bool:
    return (
        not s["is_archived"]
        and s["role"] is None
        and s["subagent_parent"] is None
        and SIDE_LABEL not in s["labels"]
    )


def activity(s: dict) -> datetime:
    return datetime.fromisoformat(s["last_message_at"] or s["status_updated_at"] or s["created_at"])


def ordering(sessions: list[dict]) -> list[dict]:
    elig = [s for s in sessions if eligible(s)]
    elig.sort(key=lambda s: s["id"])  # ties by id ...
    elig.sort(key=activity, reverse=True)  # ... then most recent first (stable)
    return elig


def blob(s: dict, part: str = "all") -> str:
    pieces = [s["name"], s["workspace"]]
    if part in ("summary", "all"):
        pieces.append(s["summary"] or "")
    if part == "all":
        pieces.extend(m["text"] for m in s["messages"])
    return "\n".join(pieces).lower()


def has_all(s: dict, keys, part: str = "all") -> bool:
    b = blob(s, part)
    return all(k.lower() in b for k in keys)


def has_any(s: dict, keys, part: str = "all") -> bool:
    b = blob(s, part)
    return any(k.lower() in b for k in keys)


def clear_top(order: list[dict], now: datetime) -> bool:
    """One task is clearly the most recent: touched today, >= 6h ahead of the next one."""
    local_midnight = now.replace(hour=0, minute=0, second=0)
    return activity(order[0]) >= local_midnight and activity(order[0]) - activity(
        order[1]
    ) >= timedelta(hours=6)


def verify_sessions(sid: str, now: datetime, sessions: list[dict]) -> None:
    """The sessions are well-formed: unique ids, consistent timestamps, known states."""
    by_id = {s["id"]: s for s in sessions}
    assert len(by_id) == len(sessions), f"{sid}: duplicate ids"
    assert 35 <= len(sessions) <= 60, (sid, len(sessions))
    for s in sessions:
        created = datetime.fromisoformat(s["created_at"])
        assert created <= now, (sid, s["id"])
        for field_name in ("status_updated_at", "last_message_at"):
            if s[field_name]:
                t = datetime.fromisoformat(s[field_name])
                assert created <= t <= now, (sid, s["id"], field_name)
        ats = [datetime.fromisoformat(m["at"]) for m in s["messages"]]
        assert ats == sorted(ats), (sid, s["id"])
        if ats:
            assert ats[0] >= created and ats[-1] == datetime.fromisoformat(s["last_message_at"]), (
                sid,
                s["id"],
            )
        else:
            assert s["last_message_at"] is None
        if s["subagent_parent"]:
            assert s["subagent_parent"] in by_id
        assert s["state"] in {"active", "running", "waiting_for_user", "blocked", "aborted"}
        if "completion_count" in s:
            assert s["summary"] and isinstance(s["completion_count"], int)
            assert s["completion_count"] >= 1


def verify_snapshot(
    sid: str,
    now: datetime,
    sessions: list[dict],
    cases: list[Case],
    ids: dict[str, str],
    allowed_tags: frozenset[str],
    extra_check: ExtraCheck | None = None,
) -> None:
    verify_sessions(sid, now, sessions)
    by_id = {s["id"]: s for s in sessions}
    order = ordering(sessions)
    acts = [activity(s) for s in order]
    assert len(set(acts)) == len(acts), f"{sid}: ordering ties"
    cands = order[:WINDOW]
    cand_ids = {s["id"] for s in cands}
    pos = {s["id"]: i + 1 for i, s in enumerate(order)}
    local_midnight = now.replace(hour=0, minute=0, second=0)

    for c in cases:
        assert set(c.tags) <= allowed_tags, (c.request, c.tags)
        tgt = by_id[ids[c.target]] if c.target else None
        where = f"{sid}: {c.request!r}"
        if c.expect == "existing":
            assert tgt is not None and tgt["id"] in cand_ids, where
            assert eligible(tgt), where
            if c.position is not None:
                assert pos[tgt["id"]] == c.position, (where, pos[tgt["id"]])
        else:
            assert c.expect in ("new", "clarify"), where
            assert tgt is None, where
        if extra_check is not None:
            extra_check(c, tgt, where)
        if c.check == "unique":
            assert has_all(tgt, c.keys), where
            others = [s["id"] for s in cands if s is not tgt and has_all(s, c.keys)]
            assert not others, (where, others)
        elif c.check == "ambiguous":
            hits = [s for s in cands if has_all(s, c.keys)]
            assert len(hits) >= 2, where
        elif c.check == "ineligible":
            assert not any(has_all(s, c.keys) for s in cands), where
            outside = [s for s in sessions if s["id"] not in cand_ids and has_all(s, c.keys)]
            assert outside, where
            if c.position is not None:
                assert [pos.get(s["id"]) for s in outside] == [c.position], (
                    where,
                    [pos.get(s["id"]) for s in outside],
                )
            else:
                assert all(not eligible(s) for s in outside), where
        elif c.check == "none":
            assert not any(has_any(s, c.keys) for s in sessions), where
        elif c.check == "new_overlap":
            assert any(has_all(s, c.keys) for s in cands), where
        elif c.check == "recency":
            other = by_id[ids[c.other]]
            assert other["id"] in cand_ids and has_all(other, c.keys) and has_all(tgt, c.keys), (
                where
            )
            assert activity(tgt) - activity(other) >= timedelta(days=14), where
            hits = [s["id"] for s in cands if has_all(s, c.keys)]
            assert sorted(hits) == sorted([tgt["id"], other["id"]]), (where, hits)
        elif c.check == "ref_top":
            assert order[0] is tgt, where
            assert clear_top(order, now), where
        elif c.check == "ref_tie":
            # the two most recent are within 15 minutes, both touched today
            assert activity(order[0]) - activity(order[1]) <= timedelta(minutes=15), where
            assert activity(order[1]) >= local_midnight, where
        elif c.check == "ref_unclear":
            assert not clear_top(order, now), where
            # and not "almost clear" either: the two most recent are within an hour
            assert activity(order[0]) - activity(order[1]) <= timedelta(hours=1), where
        else:
            raise AssertionError(c.check)
        # Which information layer is needed to get an `existing` case right.
        if c.layer == "name":
            assert has_all(tgt, c.keys, "name"), where
        elif c.layer == "summary":
            assert not has_all(tgt, c.keys, "name") and has_all(tgt, c.keys, "summary"), where
        elif c.layer == "evidence":
            assert not has_all(tgt, c.keys, "summary"), where
        else:
            assert c.expect != "existing" or c.check == "ref_top", where


# --------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------


def generate(ds: Dataset) -> None:
    """Build, verify and write ``ds.out``; print a short report."""
    rng = random.Random(ds.seed)
    snapshots: dict[str, dict] = {}
    out_cases: list[dict] = []
    for fn in ds.snapshots:
        sid, now, sessions, cases, ids = build_snapshot(fn, rng, ds)
        verify_snapshot(sid, now, sessions, cases, ids, ds.allowed_tags, ds.extra_check)
        snapshots[sid] = {"now": iso(now), "sessions": sessions}
        for i, c in enumerate(cases, start=1):
            if c.expect == "existing":
                expect = {"outcome": "existing", "session_id": ids[c.target]}
            else:
                expect = {"outcome": c.expect}
            out_cases.append(
                {
                    "id": f"{ds.short[sid]}-{i:02d}",
                    "snapshot": sid,
                    "request": c.request,
                    "expect": expect,
                    "tags": sorted(set(c.tags)) + ([f"layer:{c.layer}"] if c.layer else []),
                }
            )
    tag_counts: dict[str, int] = {}
    for c in out_cases:
        for t in c["tags"]:
            tag_counts[t] = tag_counts.get(t, 0) + 1
    missing = [t for t in sorted(ds.allowed_tags) if tag_counts.get(t, 0) < 2]
    assert not missing, missing
    assert len(out_cases) >= ds.min_cases and 5 <= len(snapshots) <= ds.max_snapshots
    assert len({c["id"] for c in out_cases}) == len(out_cases)
    assert len({(c["snapshot"], c["request"]) for c in out_cases}) == len(out_cases)
    data = {"schema": SCHEMA, "snapshots": snapshots, "cases": out_cases}
    text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
    assert len(text.encode()) < 5_000_000
    ds.out.write_text(text, encoding="utf-8")
    outcomes: dict[str, int] = {}
    for c in out_cases:
        outcomes[c["expect"]["outcome"]] = outcomes.get(c["expect"]["outcome"], 0) + 1
    print(
        f"wrote {ds.out} ({len(text.encode())} bytes): {len(snapshots)} snapshots, "
        f"{sum(len(s['sessions']) for s in snapshots.values())} sessions, {len(out_cases)} cases "
        f"{dict(sorted(outcomes.items()))}"
    )
    for t in sorted(tag_counts):
        print(f"  {t:20s} {tag_counts[t]}")

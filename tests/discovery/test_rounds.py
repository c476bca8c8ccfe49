"""Rounds (scripted model, both databases): Discovery's notes survive a crash and the round
resumes at Judgement only; the passes cannot speak; a finding found three times is queued
once; the owner's reply to a finding's message reaches the next Judgement; a noted deadline
that comes near wakes a round."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from bot.llm.scripted import PlannedReply
from bot.llm.types import Message
from bot.memory import recall
from storage.db import Database
from storage.models import NotebookNote, OutboxMessage
from tests.discovery.support import MORNING, DiscoveryWorld, end_pass, send

REC = re.compile(r"\[(rec-\d+)\]")


def note_what_was_found(messages: list[Message], _tools: object = None) -> PlannedReply:
    refs = REC.findall(next(m.content or "" for m in reversed(messages) if m.role == "tool"))
    return send("note_append", {"kind": "situation", "refs": refs[:1],
                                "text": "Li promised the budget report by Friday"})  # fmt: skip


def emit(text: str, *refs: str) -> PlannedReply:
    return send("finding_emit", {"text": text, "refs": list(refs)})


async def notes(db: Database) -> int:
    async with db.read() as s:
        return int(await s.scalar(select(func.count(NotebookNote.id))) or 0)


async def test_a_crash_after_discovery_resumes_at_judgement_only(
    db: Database, tmp_path: Path
) -> None:
    w = DiscoveryWorld(db, tmp_path)
    await w.owner_dm()
    seq = await w.add_record("Li: I will send the budget report by Friday", MORNING)
    w.discovery.add(send("memory_search", {"query": "budget"}), note_what_was_found, end_pass())
    w.judgement.add(asyncio.CancelledError)  # the process dies in Judgement's first call
    with pytest.raises(asyncio.CancelledError):
        await w.beat(MORNING)
    [round_] = await w.rounds()
    assert round_.phase == "judgement" and await notes(db) == 1
    discovery_calls = len(w.discovery.requests)

    w.worker = w.new_worker()  # the restarted process
    w.judgement.add(emit("Li owes you the budget report by Friday", f"rec-{seq}"), end_pass())
    beat = await w.beat(MORNING + timedelta(minutes=1))  # not yet due, but a round is open
    assert beat.did == "round" and beat.round is not None and beat.round.queued == 1
    assert len(w.discovery.requests) == discovery_calls  # Discovery did not run again
    judged = w.judgement.requests[-1][0][1].content or ""
    assert "Li promised the budget report by Friday" in judged  # its note reached Judgement
    [item] = await w.finding_items()
    assert "Li owes you the budget report by Friday" in item.payload["text"]
    assert f"rec-{seq}" in item.payload["text"]
    assert [r.phase for r in await w.rounds()] == ["done"]


async def test_a_pass_that_calls_send_user_is_refused_and_nothing_is_sent(
    db: Database, tmp_path: Path
) -> None:
    w = DiscoveryWorld(db, tmp_path)
    await w.owner_dm()
    await w.add_record("Li: hello", MORNING)
    w.discovery.add(send("send_user", {"text": "I found something!"}),
                    send("tasks_create", {"title": "x", "text": "y"}), end_pass())  # fmt: skip
    w.judgement.add(send("send_user", {"text": "Hi owner"}), end_pass())
    await w.beat(MORNING)
    refusals = [
        m.content or ""
        for requests in (w.discovery.requests, w.judgement.requests)
        for messages, _ in requests
        for m in messages
        if m.role == "tool"
    ]
    assert "error: no tool named 'send_user'" in refusals[0]
    assert any("no tool named 'tasks_create'" in r for r in refusals)
    tools = {t.name for _, specs in w.discovery.requests + w.judgement.requests for t in specs}
    assert not tools & {"send_user", "tasks_create", "tasks_delegate", "sleep", "entry_write"}
    async with db.read() as s:
        assert await s.scalar(select(func.count(OutboxMessage.id))) == 0
    assert await w.finding_items() == []


async def test_three_rounds_that_find_the_same_thing_deliver_it_once(
    db: Database, tmp_path: Path
) -> None:
    w = DiscoveryWorld(db, tmp_path)
    await w.owner_dm()
    seq = await w.add_record("Li: budget report by Friday", MORNING)
    said = [
        "Li promised the budget report by Friday and has not sent it",
        "The budget report Li promised by Friday is still not sent",
        "Li has still not sent the budget report promised by Friday",
    ]
    for i, text in enumerate(said):
        if i:
            await w.add_record(f"Li: unrelated chatter {i}", MORNING + timedelta(hours=i))
        w.discovery.add(end_pass())
        w.judgement.add(emit(text, f"rec-{seq}"), end_pass())
        beat = await w.beat(MORNING + timedelta(hours=i, minutes=1))
        assert beat.did == "round", beat
    assert [f.status for f in await w.findings()] == ["queued", "repeat", "repeat"]
    assert len(await w.finding_items()) == 1

    # Something new behind it (a new record as evidence): delivered again.
    later = MORNING + timedelta(hours=5)
    newer = await w.add_record("Li: sorry, the budget slips to Monday", later)
    w.discovery.add(end_pass())
    backed = emit(said[0] + "; now he says Monday", f"rec-{seq}", f"rec-{newer}")
    w.judgement.add(backed, end_pass())
    await w.beat(MORNING + timedelta(hours=5, minutes=1))
    assert [f.status for f in await w.findings()][-1] == "queued"
    assert len(await w.finding_items()) == 2


async def test_the_owners_reply_to_a_finding_reaches_the_next_judgement(
    db: Database, tmp_path: Path
) -> None:
    w = DiscoveryWorld(db, tmp_path)
    await w.owner_dm()
    seq = await w.add_record("Li: the vendor list is attached", MORNING)
    w.discovery.add(end_pass())
    w.judgement.add(emit("Li sent the vendor list", f"rec-{seq}"), end_pass())
    await w.beat(MORNING)
    [finding] = await w.findings()
    told = await w.bot_tells(finding, MORNING + timedelta(minutes=1))
    await w.owner_says("what's for lunch?", MORNING + timedelta(minutes=5))  # not about it
    await w.owner_says("not useful, I knew that", MORNING + timedelta(minutes=10),
                       replying_to=told)  # fmt: skip

    w.discovery.add(end_pass())
    w.judgement.add(end_pass())
    beat = await w.beat(MORNING + timedelta(minutes=30))
    assert beat.reason == "new: the owner reacted to a finding"
    judged = w.judgement.requests[-1][0][1].content or ""
    assert "Li sent the vendor list" in judged
    assert "owner replied: 'not useful, I knew that'" in judged
    assert "lunch" not in judged
    [feedback] = await w.feedback()
    assert (feedback.finding_id, feedback.kind) == (finding.id, "reply")
    assert feedback.text == "not useful, I knew that"


async def test_silence_is_recorded_as_no_reaction_not_as_rejection(
    db: Database, tmp_path: Path
) -> None:
    w = DiscoveryWorld(db, tmp_path)
    await w.owner_dm()
    seq = await w.add_record("Li: the vendor list is attached", MORNING)
    w.discovery.add(end_pass())
    w.judgement.add(emit("Li sent the vendor list", f"rec-{seq}"), end_pass())
    await w.beat(MORNING)
    [finding] = await w.findings()
    await w.bot_tells(finding, MORNING + timedelta(minutes=1))
    await w.owner_says("thanks, and what's for lunch?", MORNING + timedelta(minutes=2))
    await w.add_record("Li: one more thing", MORNING + timedelta(minutes=20))
    w.discovery.add(end_pass())
    w.judgement.add(end_pass())
    await w.beat(MORNING + timedelta(minutes=30))
    judged = w.judgement.requests[-1][0][1].content or ""
    assert "Li sent the vendor list" in judged and "(no reaction yet)" in judged
    assert await w.feedback() == []  # the owner's next words were not about it


async def test_a_noted_deadline_wakes_a_round_when_it_comes_near(
    db: Database, tmp_path: Path
) -> None:
    w = DiscoveryWorld(db, tmp_path)
    await w.add_record("Li: contract renewal is due on the 10th", MORNING)
    due = (MORNING + timedelta(days=9)).date().isoformat()
    w.discovery.add(send("note_append", {"kind": "situation", "text": "contract renewal due",
                                         "due_on": due}), end_pass())  # fmt: skip
    w.judgement.add(end_pass())
    await w.beat(MORNING)
    day = timedelta(days=1)
    assert (await w.beat(MORNING + day)).reason == "nothing new since the last round"
    w.discovery.add(end_pass())
    w.judgement.add(end_pass())
    near = await w.beat(MORNING + 7 * day + timedelta(hours=1))  # two days before
    assert near.reason == "new: noted deadlines near"
    assert (await w.beat(MORNING + 8 * day)).reason == "nothing new since the last round"


async def test_a_bad_note_is_refused_with_a_reason_and_nothing_is_written(
    db: Database, tmp_path: Path
) -> None:
    w = DiscoveryWorld(db, tmp_path)
    await w.add_record("Li: hello", MORNING)
    w.discovery.add(
        send("note_append", {"kind": "gossip", "text": "x"}),
        send("note_append", {"kind": "situation", "text": "x", "due_on": "Friday"}),
        send("note_append", {"kind": "situation", "text": "x", "refs": ["DROP TABLE"]}),
        send("memory_original", {"ref": "rec-99999999999999999999999"}),
        send("note_append", {"kind": "situation", "text": "x", "refs": ["rec-٣"]}),
        end_pass(),
    )
    w.judgement.add(send("finding_emit", {"text": "no evidence", "refs": []}), end_pass())
    await w.beat(MORNING)
    outputs = [m.content or "" for m in w.discovery.requests[-1][0] if m.role == "tool"]
    assert "error: kind must be one of interest" in outputs[0]
    assert "error: due_on 'Friday': write YYYY-MM-DD" in outputs[1]
    assert "error: 'DROP TABLE' is not a ref" in outputs[2]
    assert f"error: {recall.NOT_VISIBLE}" in outputs[3]  # a number no record has: absent
    assert "error: 'rec-٣' is not a ref" in outputs[4]  # Arabic-Indic digits read as 3
    judged = [m.content or "" for m in w.judgement.requests[-1][0] if m.role == "tool"]
    assert "error: a finding needs its evidence: at least one ref" in judged[0]
    assert await notes(db) == 0 and await w.findings() == []


async def test_a_pass_that_raises_fails_its_round_once_instead_of_every_beat(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the round stayed open, and every beat after it ran Discovery's model again."""
    w = DiscoveryWorld(db, tmp_path)
    await w.owner_dm()
    await w.add_record("Li: I will send the budget report by Friday", MORNING)
    w.discovery.add(end_pass())

    async def raising(*_args: object) -> object:
        raise OverflowError("value out of int64 range")

    monkeypatch.setattr(w.runner.judgement, "run", raising)
    beat = await w.beat(MORNING)
    assert beat.round is not None and beat.round.phase == "failed"
    calls = w.calls
    for minute in range(1, 6):  # the beats a loop would run next
        assert (await w.beat(MORNING + timedelta(minutes=minute))).did == "idle"
    assert w.calls == calls
    [round_] = await w.rounds()
    assert round_.phase == "failed" and "OverflowError: value out of int64 range" in round_.reason

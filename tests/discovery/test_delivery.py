"""A finding's life after Judgement (scripted model, both databases): it is delivered when
the Bot's message telling it is sent, not when it is queued; a message that failed leaves it
unsent (and a later round may tell it again); the owner's feedback is a reply to or a
reaction on that message, nothing else; and a waiting Matter whose wake comes near wakes a
round."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from bot.discovery.delivery import settle_deliveries
from storage.db import Database
from storage.models import Matter, Session
from tests.discovery.support import MORNING, OWNER, DiscoveryWorld, end_pass, send

TOLD_AT = MORNING + timedelta(minutes=2)


def emit(text: str, *refs: str) -> object:
    return send("finding_emit", {"text": text, "refs": list(refs)})


async def one_finding(w: DiscoveryWorld, text: str = "Li sent the vendor list") -> None:
    await w.owner_dm()
    seq = await w.add_record(f"Li: {text}", MORNING)
    w.discovery.add(end_pass())
    w.judgement.add(emit(text, f"rec-{seq}"), end_pass())
    await w.beat(MORNING)


async def test_a_finding_is_delivered_when_its_message_is_sent_not_when_queued(
    db: Database, tmp_path: Path
) -> None:
    w = DiscoveryWorld(db, tmp_path)
    await one_finding(w)
    [finding] = await w.findings()
    assert finding.status == "queued" and finding.delivered_at is None
    await settle_deliveries(db)  # the Bot has not handled it yet
    assert (await w.findings())[0].status == "queued"

    # The Bot's turn wrote two replies: the first failed, the second waits for the sender.
    assert await w.bot_tells(finding, TOLD_AT, states=("failed", "pending")) == ""
    assert await settle_deliveries(db) == 0
    assert (await w.findings())[0].status == "queued"  # its message may still be sent

    turn = f"c{(await w.finding_items())[0].conversation_id}-i{(await w.finding_items())[0].id}"
    sent_at = TOLD_AT + timedelta(seconds=30)
    told = await w.sender_settles(turn, 1, "sent", sent_at)
    assert await settle_deliveries(db) == 1
    [delivered] = await w.findings()
    assert delivered.status == "delivered"
    assert delivered.delivered_at == sent_at and delivered.message_id == told


async def test_a_finding_whose_message_failed_is_unsent_and_may_be_told_again(
    db: Database, tmp_path: Path
) -> None:
    w = DiscoveryWorld(db, tmp_path)
    await one_finding(w)
    [finding] = await w.findings()
    await w.bot_tells(finding, TOLD_AT, states=("failed",))
    await settle_deliveries(db)
    assert (await w.findings())[0].status == "unsent"

    newer = await w.add_record("Li: chatter", MORNING + timedelta(hours=1))
    w.discovery.add(end_pass())
    w.judgement.add(emit("Li sent the vendor list", f"rec-{newer - 1}"), end_pass())
    await w.beat(MORNING + timedelta(hours=1, minutes=1))
    assert [f.status for f in await w.findings()] == ["unsent", "queued"]  # not a repeat


async def test_a_reaction_on_the_findings_message_is_feedback_and_others_are_not(
    db: Database, tmp_path: Path
) -> None:
    w = DiscoveryWorld(db, tmp_path)
    await one_finding(w)
    [finding] = await w.findings()
    told = await w.bot_tells(finding, TOLD_AT)
    await w.react("om_something_else", "THUMBSUP", TOLD_AT)
    await w.react(told, "SMILE", TOLD_AT, who="ou_someone_else")
    await w.react(told, "THUMBSUP", TOLD_AT + timedelta(minutes=1))
    w.discovery.add(end_pass())
    w.judgement.add(end_pass())
    beat = await w.beat(MORNING + timedelta(minutes=30))
    assert beat.reason == "new: the owner reacted to a finding"
    assert "owner reacted with THUMBSUP" in (w.judgement.requests[-1][0][1].content or "")
    assert [(f.finding_id, f.kind, f.text) for f in await w.feedback()] == [
        (finding.id, "reaction", "THUMBSUP")
    ]
    # Read again at the next beat: recorded once.
    assert (await w.beat(MORNING + timedelta(hours=1))).reason == (
        "nothing new since the last round"
    )
    assert len(await w.feedback()) == 1


async def add_matter(db: Database, status: str, wake_in: timedelta) -> None:
    async with db.write() as s:
        session = Session(name=f"task {status} {wake_in}", state="active", labels=[],
                          is_archived=False, created_at=MORNING)  # fmt: skip
        s.add(session)
        await s.flush()
        s.add(Matter(session_id=session.id, requested_by=OWNER, objective="follow up",
                     status=status, next_wake_at=MORNING + wake_in, created_at=MORNING,
                     updated_at=MORNING))  # fmt: skip


async def test_a_waiting_matter_due_soon_wakes_a_round_and_a_far_one_does_not(
    db: Database, tmp_path: Path
) -> None:
    w = DiscoveryWorld(db, tmp_path)
    await w.add_record("Li: hello", MORNING)
    w.discovery.add(end_pass())
    w.judgement.add(end_pass())
    await w.beat(MORNING)

    await add_matter(db, "waiting", timedelta(days=10))
    far = await w.beat(MORNING + timedelta(hours=1))
    assert far.reason == "nothing new since the last round"

    await add_matter(db, "waiting", timedelta(days=1))
    w.discovery.add(end_pass())
    w.judgement.add(end_pass())
    near = await w.beat(MORNING + timedelta(hours=2))
    assert near.reason == "new: Matters due soon"

"""#41's exactly once, with a real crash: a `maka serve` process (tests/faults/processes.py) on
its embedded SQLite file, the owner signed in through the loopback Feishu fake, asked for an
event with an attendee. The approval card reaches the owner and nothing exists before the
click; the click comes twice; the Feishu stand-in holds the event create once the whole request
has arrived, the process is killed with SIGKILL, and Feishu then creates the event (it had the
request). The click is delivered again, to a new process; once the dead one's liveness lapses
(bot/host/workers.py, LIVENESS_TTL) the new one runs the action again with the same
idempotency key, and Feishu answers the event it created: one event, with its attendee, and
the ledger says who approved it and when.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import aiohttp

from tests.actions.support import buttons, json_title
from tests.fakes import HistoryMessage, SentMessage
from tests.faults.harness import OWNER, FaultWorld, fault_world, wait_for
from tests.faults.traffic import dm_chat
from tests.owner.support import PUBLIC_URL, SECRET_KEY

LI = "ou_li_wei"
SYNC = {
    "title": "Sync with Li",
    "start": "2030-01-07T10:00:00",
    "end": "2030-01-07T10:30:00",
    "attendees": LI,
    "reason": "the owner asked for a sync with Li",
}
OWNER_DM = dm_chat(OWNER)
KEY = "maka-action-1"  # the first action's idempotency key (bot/actions/ledger.py)
LINK = re.compile(r"https?://\S+")
WAIT = 20.0  # seconds for one step of the story on a busy machine
TAKEOVER = 45.0  # the dead process's liveness lapses (15 s), then the action runs again


async def say(world: FaultWorld, text: str) -> None:
    """The owner writes in their DM with the bot (kept in the chat's history, as Feishu does,
    so a reply to it finds its target)."""
    event = world.events.message_event(
        text=text, chat_id=OWNER_DM, chat_type="p2p", sender_open_id=OWNER
    )
    message = event["event"]["message"]
    world.feishu.add_history(
        OWNER_DM,
        [
            HistoryMessage.text(
                text,
                create_time=int(message["create_time"]) / 1000,
                sender_open_id=OWNER,
                message_id=message["message_id"],
            )
        ],
    )
    status, body = await world.events.post(event)
    assert status == 200, body


def in_dm(world: FaultWorld) -> list[SentMessage]:
    return [m for m in world.feishu.sent if m.chat_id == OWNER_DM]


async def sign_in(world: FaultWorld) -> None:
    """/signin, the link, the fake's consent, the callback: as the owner's browser would."""
    before = len(in_dm(world))
    await say(world, "/signin")

    async def linked() -> bool:
        return any(LINK.search(m.text or "") for m in in_dm(world)[before:])

    await wait_for(linked, timeout=WAIT, what="the sign-in link", detail=logs(world))
    link = next(f.group(0) for m in in_dm(world)[before:] if (f := LINK.search(m.text or "")))
    async with aiohttp.ClientSession() as http:
        async with http.get(link, allow_redirects=False) as consent:
            assert consent.status == 302, await consent.text()
            callback = consent.headers["Location"]
        assert callback.startswith(PUBLIC_URL), callback  # its reverse proxy is the process
        async with http.get(world.a.url + callback.removeprefix(PUBLIC_URL)) as page:
            assert page.status == 200, await page.text()


def approval_card(world: FaultWorld) -> SentMessage | None:
    cards = [
        m
        for m in in_dm(world)
        if m.msg_type == "interactive" and json_title(m.body).startswith("Action #")
    ]
    return cards[0] if cards else None


async def card_recorded(world: FaultWorld, card: SentMessage) -> bool:
    """The sender wrote down Feishu's answer for the card (a person clicks after that)."""
    rows = await world.query("SELECT platform_message_ids FROM outbox")
    return any(card.message_id in str(r["platform_message_ids"] or "") for r in rows)


async def action_row(world: FaultWorld) -> dict[str, Any] | None:
    rows = await world.query(
        "SELECT state, decided_by, decided_at, result, last_error, attempts FROM actions"
        " WHERE id = 1"
    )
    return dict(rows[0]) if rows else None


def creates(world: FaultWorld) -> list[Any]:
    return [
        r
        for r in world.feishu.requests
        if r.method == "POST" and r.path.endswith("/events") and "/calendars/" in r.path
    ]


def logs(world: FaultWorld) -> Any:
    async def detail() -> str:
        return f"action: {await action_row(world)}\n{world.logs()}"

    return detail


async def test_an_approved_event_killed_mid_create_exists_once(tmp_path: Path) -> None:
    settings = {"MAKA_PUBLIC_URL": PUBLIC_URL, "MAKA_SECRET_KEY": SECRET_KEY}
    async with fault_world(
        tmp_path, replicas=1, database="sqlite", extra_settings=settings
    ) as world:
        await sign_in(world)
        world.model.call_next("create_event", SYNC)
        await say(world, "ping book-a-sync-with-li")  # the stand-in's turns answer `ping`s

        async def carded() -> bool:
            card = approval_card(world)
            return card is not None and await card_recorded(world, card)

        await wait_for(carded, timeout=WAIT, what="the approval card", detail=logs(world))
        card = approval_card(world)
        assert card is not None
        assert "Create the event 'Sync with Li'" in card.content and LI in card.content
        assert world.feishu.live_events(OWNER) == [] and creates(world) == []

        world.feishu.hold_next_event_creates(1)
        click = world.events.card_action_event(
            value=buttons(card.body)["Approve"],
            open_message_id=card.message_id,
            open_chat_id=card.chat_id,
            operator_open_id=OWNER,
        )
        for _ in range(2):  # the click, and Feishu delivering it again
            status, body = await world.events.post(click)
            assert status == 200, body
        try:
            async with asyncio.timeout(WAIT):
                held = await world.feishu.held_creates.get()
        except TimeoutError:
            raise AssertionError(f"no event create reached Feishu\n{await logs(world)()}") from None
        assert held.uuid == KEY
        assert world.feishu.live_events(OWNER) == []  # held: Feishu has not answered yet

        await world.a.kill()
        held.release()  # Feishu creates the event; the process that asked is gone

        async def created() -> bool:
            return len(world.feishu.live_events(OWNER)) == 1

        await wait_for(created, timeout=WAIT, what="Feishu creating the held event")
        row = await action_row(world)
        assert row is not None and row["state"] == "running", row  # its result never came

        await world.a.start()  # a supervisor's restart: a new process, a new instance id
        status, body = await world.events.post(click)  # delivered once more, to the new one
        assert status == 200, body

        async def done() -> bool:
            row = await action_row(world)
            return row is not None and row["state"] in ("done", "failed")

        await wait_for(done, timeout=TAKEOVER, what="the action to finish", detail=logs(world))
        row = await action_row(world)
        assert row is not None
        [event] = world.feishu.live_events(OWNER)
        assert row["state"] == "done", row
        assert row["result"] == f"event created: {event.event_id} with 1 attendee(s)"
        assert event.summary == "Sync with Li" and event.attendees == [LI]
        assert len(world.feishu.events) == 1
        assert [r.query["idempotency_key"] for r in creates(world)] == [KEY, KEY]
        assert row["attempts"] == 2  # run twice, once per process
        assert row["decided_by"] == OWNER and row["decided_at"] is not None

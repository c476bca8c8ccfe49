"""kill -9 of a replica in the middle of a turn that shows a progress card (issue #39 item
6): the turn searched memory, its card is in the chat and "working", and the model's next
step is held when the replica holding the conversation is killed. After the restart the
batch runs again under the same turn key: it reuses the card instead of making a second one,
the user gets exactly one answer, and no card is left "working"."""

from __future__ import annotations

import asyncio

import pytest

from tests.faults.harness import BOT_LEASE_PREFIX, FaultWorld, wait_for

pytestmark = pytest.mark.faults

RECOVERY_LIMIT = 90.0


async def test_kill_9_mid_card_gives_one_answer_and_leaves_no_card_working(
    world: FaultWorld,
) -> None:
    async with world.traffic("card") as traffic:
        world.model.park_after_search()
        item = traffic.send_one()
        async with asyncio.timeout(30):
            parked = await world.model.parked.get()

        async def card_shown() -> bool:
            rows = await world.query(
                "SELECT count(*) AS n FROM progress_cards"
                " WHERE status = 'working' AND message_id IS NOT NULL"
            )
            return int(rows[0]["n"]) == 1

        await wait_for(card_shown, timeout=30, what="the turn's card in the chat, working")
        conversation = await world.conversation_of(item.chat_id)
        holders = dict(await world.held_conversation_leases())
        victim = world.replica_of(holders.get(f"{BOT_LEASE_PREFIX}{conversation}") or "")
        assert victim is not None, f"no replica holds the parked turn's lease: {holders}"
        await victim.kill()
        parked.release()
        await victim.start()

        async def cards_ended() -> bool:
            rows = await world.query(
                "SELECT count(*) AS n FROM progress_cards"
                " WHERE status = 'working' OR pushed_version <> version"
            )
            return int(rows[0]["n"]) == 0

        await wait_for(
            cards_ended,
            timeout=RECOVERY_LIMIT,
            what="no card left working, the last state pushed",
            detail=world.pending_detail,
        )
        verdict = await world.settle(traffic)

    rows = await world.query("SELECT key, status, steps FROM progress_cards")
    assert [(r["status"]) for r in rows] == ["done"], [dict(r) for r in rows]
    card_messages = [m for m in world.feishu.sent if world.feishu.card_of_message(m.content)]
    assert len(card_messages) == 1, "the turn run again reused its card"
    [card] = [world.feishu.card_of_message(m.content) for m in card_messages]
    assert card is not None and card.text.endswith("- done") and not card.streaming
    verdict.notes.append(f"killed {victim.name} mid-card")
    print(verdict.summary())
    verdict.assert_clean(world.logs())  # exactly one answer

"""Progress cards' desired state: changes coalesce into the next push, pushes are a second
apart, and the sweep ends the cards whose turn is gone (and only those)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from storage.db import Database
from storage.repos import conversations, inbox, progress_cards
from storage.repos.conversations import NewConversation
from storage.repos.progress_cards import Desired

NOW = datetime(2026, 12, 5, 17, 0, tzinfo=UTC)


async def _turn_card(db: Database, key: str, *, delivered: bool, at: datetime = NOW) -> None:
    async with db.write() as tx:
        chat = (
            await conversations.get_or_create_many(tx, [NewConversation("feishu", "oc_d", "p2p")])
        )[("feishu", "oc_d")]
        item = await inbox.append(
            tx, kind="user_message", payload={"text": key}, conversation_id=chat.id, created_at=at
        )
        assert item is not None
        if delivered:
            await inbox.mark_delivered(tx, [item], key, at)
        desired = Desired(key, "feishu", "oc_d", "Working on it", ["searching memory"])
        desired = Desired(**{**vars(desired), "inbox_item_id": item, "conversation_id": chat.id})
        await progress_cards.show(tx, desired, at)


async def _status(db: Database, key: str) -> tuple[str, list[str]]:
    async with db.read() as tx:
        card = await progress_cards.by_key(tx, key)
    assert card is not None
    return card.status, list(card.steps)


async def test_a_card_left_working_by_a_turn_that_is_gone_is_finalized_by_the_sweep(
    db: Database,
) -> None:
    await _turn_card(db, "handled", delivered=True)  # its batch handled, the card never ended
    await _turn_card(db, "killed", delivered=False)  # its turn will run again: keeps the card
    await _turn_card(db, "forgotten", delivered=False, at=NOW - timedelta(minutes=20))

    async with db.write() as tx:
        swept = await progress_cards.sweep(tx, NOW)

    assert sorted(swept) == ["forgotten", "handled"]
    assert await _status(db, "handled") == (
        progress_cards.INTERRUPTED,
        ["searching memory", "interrupted"],
    )
    assert (await _status(db, "killed"))[0] == progress_cards.WORKING
    async with db.write() as tx:
        assert await progress_cards.sweep(tx, NOW) == [], "an ended card is swept once"


async def test_changes_between_pushes_coalesce_into_one_push_a_second_later(
    db: Database,
) -> None:
    await _turn_card(db, "busy", delivered=False)
    async with db.write() as tx:
        [claimed] = await progress_cards.claim_due(
            tx, platform="feishu", owner="w", now=NOW, limit=5, lease=timedelta(seconds=15)
        )
        await progress_cards.settle(tx, claimed.id, "w", version=claimed.version, now=NOW)
    for n in range(5):  # five steps in the second after the push
        later = NOW + timedelta(milliseconds=100 * n)
        desired = Desired(
            "busy", "feishu", "oc_d", "Working on it", [f"step {i}" for i in range(n)]
        )
        async with db.write() as tx:
            await progress_cards.show(tx, desired, later)
    async with db.write() as tx:
        early = await progress_cards.claim_due(
            tx,
            platform="feishu",
            owner="w",
            now=NOW + timedelta(milliseconds=900),
            limit=5,
            lease=timedelta(seconds=15),
        )
        [due] = await progress_cards.claim_due(
            tx,
            platform="feishu",
            owner="w",
            now=NOW + progress_cards.PUSH_GAP,
            limit=5,
            lease=timedelta(seconds=15),
        )
    assert early == [], "not pushed again within a second of the last push"
    assert due.steps == ["step 0", "step 1", "step 2", "step 3"], "the latest state, once"

"""Console progress cards need no network: the console's card worker marks each state shown,
and the page reads the cards of its conversation from the table."""

from __future__ import annotations

from bot.channels.console.progress import ConsoleProgressSender
from bot.host.notify import Notifier
from storage.db import Database
from storage.repos import conversations, progress_cards
from storage.repos.conversations import NewConversation
from storage.repos.progress_cards import Desired
from storage.types import utcnow


async def test_the_console_worker_marks_each_state_shown_for_the_page(db: Database) -> None:
    async with db.write() as tx:
        chat = (
            await conversations.get_or_create_many(
                tx, [NewConversation("console", "console-dm-owner", "p2p")]
            )
        )[("console", "console-dm-owner")]
        desired = Desired(
            "c1-i1",
            "console",
            chat.chat_id,
            "Working on it",
            ["searching memory"],
            conversation_id=chat.id,
        )
        await progress_cards.show(tx, desired, utcnow())
    worker = ConsoleProgressSender(db, Notifier(), "console-worker")
    assert await worker.run_once()
    async with db.write() as tx:
        await progress_cards.finish(tx, "c1-i1", progress_cards.DONE, utcnow(), "done")
    async with db.write() as tx:  # past the push gap, as the worker would wait
        card = await progress_cards.by_key(tx, "c1-i1")
        assert card is not None
        card.next_attempt_at = utcnow()
    assert await worker.run_once()
    assert not await worker.run_once(), "nothing more to push"

    async with db.read() as tx:
        [card] = await progress_cards.of_conversation(tx, chat.id)
    assert (card.status, card.steps) == ("done", ["searching memory", "done"])
    assert card.pushed_version == card.version and card.message_id == f"console-card-{card.id}"

"""Console progress cards need no network: the page reads them from the table
(`progress_cards.of_conversation`), so a push is only marking the state shown."""

from __future__ import annotations

from bot.channels.console.identity import CONSOLE_PLATFORM
from bot.channels.progress_sender import ClaimedCard, ProgressSender


class ConsoleProgressSender(ProgressSender):
    name = "console-progress"
    platform = CONSOLE_PLATFORM

    async def push(self, card: ClaimedCard) -> None:
        await self.pushed(
            card, message_id=card.message_id or f"console-card-{card.id}", streaming_closed=True
        )

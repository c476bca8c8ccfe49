"""The approval card in the owner's DM: the action in plain words, who asked, where and why,
with Approve / Reject buttons that run `/approve N` / `/reject N` as the clicker
(bot/assistant/click_actions.py: only the owner's click counts, bot/actions/commands.py).
After a click the card is redrawn by the click's `redraw` (`/actions show N`, `card_view`)."""

from __future__ import annotations

import logging
from datetime import tzinfo

from bot.actions.ledger import line, when
from bot.channels.cards import Button, Card
from bot.channels.console.identity import CONSOLE_PLATFORM, console_identity
from bot.host.notify import Notifier
from bot.services import Services
from storage.models import Action
from storage.repos import actions as repo
from storage.repos import conversations, outbox
from storage.types import utcnow

log = logging.getLogger(__name__)

FEISHU = "feishu"
MAX_SHOWN = 1500  # characters of the requester's words on the card: a card, not a document


def card_view(action: Action, where: str, tz: tzinfo, *, buttons: bool = True) -> Card:
    """The action's card as it is now: buttons only while it waits for the owner (and only
    for the owner's eyes: `buttons`)."""
    lines = [
        f"**{_clip(action.summary)}**",
        f"Asked by: {action.requester}",
        f"Where: {where}",
        f"Why: {_clip(action.reason) or '(no reason given)'}",
    ]
    if action.state == repo.PROPOSED:
        lines.append(f"Expires: {when(action.expires_at, tz)} without an answer")
        shown: tuple[Button, ...] = (
            Button("Approve", {"command": f"/approve {action.id}"}, "primary"),
            Button("Reject", {"command": f"/reject {action.id}"}, "danger"),
        )
    else:
        lines.append(f"Now: {line(action, tz)}")
        shown = ()
    title = f"Action #{action.id}: " + ("approve?" if shown else action.state)
    return Card(title, "\n".join(lines), shown if buttons else ())


def _clip(text: str) -> str:
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


async def send_approval_card(services: Services, action_id: int) -> bool:
    """The card, once (its outbox key is the action's), to the owner's DM on the platform the
    action was asked on; False when the owner cannot be reached there (the action then waits
    until it expires, listed by `/actions`)."""
    settings = services.settings
    async with services.db.write() as tx:
        action = await repo.get(tx, action_id)
        assert action is not None
        asked_in = (
            await conversations.get(tx, action.conversation_id)
            if action.conversation_id is not None
            else None
        )
        platform = asked_in.platform if asked_in is not None else FEISHU
        owner = console_identity(settings) if platform == CONSOLE_PLATFORM else settings.owner
        if not owner:
            return False
        dm = await conversations.find_dm(tx, platform, owner)
        if dm is None and platform != FEISHU:
            log.warning("action #%s: the owner has no DM on %s to approve it", action_id, platform)
            return False
        # Feishu reaches a person by open_id even before they wrote to the bot.
        chat_id = dm.chat_id if dm is not None else owner
        where = where_of(asked_in)
        card = card_view(action, where, settings.tz)
        await outbox.enqueue(
            tx,
            idempotency_key=action_card_key(action_id),
            platform=platform,
            chat_id=chat_id,
            content_type="card",
            content=card.to_content(),
            conversation_id=dm.id if dm is not None else None,
            now=utcnow(),
        )
    await _wake(services.notifier)
    return True


def where_of(conversation: object | None) -> str:
    if conversation is None:
        return "(unknown chat)"
    name = getattr(conversation, "name", None)
    kind = "DM" if getattr(conversation, "chat_type", "") == "p2p" else "group"
    return f"{name or getattr(conversation, 'chat_id', '')} ({kind})"


def action_card_key(action_id: int) -> str:
    return f"action-card-{action_id}"


async def _wake(notifier: Notifier) -> None:
    await notifier.notify(outbox.OUTBOX_TOPIC)

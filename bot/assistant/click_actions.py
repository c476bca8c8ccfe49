"""A click on a card's button, answered by the Bot as the clicker.

- `command`: run exactly as if the clicker had sent it (the CommandRegistry path: role and
  visibility checked as for the typed command), its one line sent as the reply. When the
  command's card changed (the command's `redraw`: the card shown before the command and after
  it, both as the clicker sees them), the card is redrawn in place with a `card_update` noting
  what was done, by whom and when. A click that changes nothing (refused, or the state was
  already so) leaves the card as it is.
- `finding`: the owner's verdict on a discovery finding (bot/discovery/buttons.py); only the
  owner's click counts.
- `answer` clicks, and the owner's "Track as a task", are not here: they are the clicker's
  message to the model (BatchItem.is_answer); a "Track" is recorded as feedback first
  (`record_tracks`).
"""

from __future__ import annotations

from dataclasses import replace

from bot.assistant.commands import CommandContext, CommandRegistry
from bot.assistant.turn_context import BatchItem, TurnContext, enqueue_reply
from bot.assistant.visibility import visibility_of
from bot.channels.cards import Card, CardUpdate
from bot.discovery.buttons import record_verdict
from storage.types import utcnow


async def answer_click(commands: CommandRegistry, ctx: TurnContext, item: BatchItem) -> None:
    services, conv = ctx.services, ctx.conversation
    action = item.action
    if "finding" in action:
        said = await record_verdict(services, item.sender_id, action, item.id)
        await enqueue_reply(services, conv, f"cmd-{item.id}", said, None, ctx.hold)
        return
    assert item.role is not None, "roles are assigned before a click is answered"
    async with services.db.read() as tx:
        visibility = await visibility_of(tx, services.settings, conv, item.sender_id)
    as_clicker = CommandContext(
        services,
        item.sender_id,
        item.role,
        conv.platform,
        conv.chat_id,
        conv.chat_type,
        conv.id,
        visibility,
    )
    text = action["command"]
    redraw = commands.redraw_for(text)
    before = await commands.dispatch(as_clicker, redraw[0]) if redraw else None
    reply = await commands.dispatch(as_clicker, text)
    await enqueue_reply(services, conv, f"cmd-{item.id}", reply, None, ctx.hold)
    if redraw is None:
        return
    after = await commands.dispatch(as_clicker, redraw[0])
    if not isinstance(after, Card) or after == before:
        return
    when = utcnow().astimezone(services.settings.tz).strftime("%H:%M")
    card = replace(after, note=f"{redraw[1]} by {item.sender_id} at {when}")
    update = CardUpdate(str(item.payload.get("card_message_id") or ""), card)
    await enqueue_reply(services, conv, f"card-{item.id}", update, None, ctx.hold)


async def record_tracks(ctx: TurnContext, items: list[BatchItem]) -> None:
    """The owner's "Track as a task" clicks among what the model is shown, recorded as their
    verdict before the model acts on them (once per click, also when the turn runs again)."""
    for item in items:
        if item.action.get("verdict") == "track":
            await record_verdict(ctx.services, item.sender_id, item.action, item.id)

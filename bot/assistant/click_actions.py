"""A click on a card's button, answered by the Bot as the clicker.

- `command`: run exactly as if the clicker had sent it (the CommandRegistry path: role and
  visibility checked as for the typed command), its one line sent as the reply. When the
  command's card changed (the command's `redraw`: the card shown before the command and after
  it, both as the clicker sees them), the card is redrawn in place with a `card_update` noting
  what was done, by whom and when. A click that changes nothing (refused, or the state was
  already so) leaves the card as it is.
- `finding`: the owner's verdict on a discovery finding (bot/discovery/buttons.py); only the
  owner's click counts, and closes the card.
- `answer` clicks, and the owner's "Track as a task", are the clicker's message to the model
  (BatchItem.is_answer); before the model reads them their card is closed and a "Track" is
  recorded as feedback (`before_the_model`).
"""

from __future__ import annotations

from dataclasses import replace

from bot.assistant.commands import CommandContext, CommandRegistry
from bot.assistant.turn_context import BatchItem, TurnContext, enqueue_reply
from bot.assistant.visibility import visibility_of
from bot.channels.cards import Card, CardUpdate, InvalidCard
from bot.discovery.buttons import record_verdict
from storage.repos import outbox
from storage.types import utcnow


async def answer_click(commands: CommandRegistry, ctx: TurnContext, item: BatchItem) -> None:
    services, conv = ctx.services, ctx.conversation
    action = item.action
    if "finding" in action:
        said, recorded = await record_verdict(services, item.sender_id, action, item.id)
        await enqueue_reply(services, conv, f"cmd-{item.id}", said, None, ctx.hold)
        if recorded:
            await close_card(ctx, item, "Marked not useful")
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
    await _redraw(ctx, item, replace(after, note=_note(ctx, item, redraw[1])))


async def before_the_model(ctx: TurnContext, items: list[BatchItem]) -> None:
    """Clicks that are the clicker's words (an answer, the owner's "Track as a task"): their
    card closed (its buttons gone, who chose what in its note) and a "Track" recorded as the
    owner's verdict, before the model reads them (once per click, also when the turn runs
    again: the keys say so)."""
    for item in items:
        action = item.action
        if "answer" in action:
            await close_card(ctx, item, f"Answered “{action['answer']}”")
        elif action.get("verdict") == "track":
            _, recorded = await record_verdict(ctx.services, item.sender_id, action, item.id)
            if recorded:
                await close_card(ctx, item, "Tracked as a task")


async def close_card(ctx: TurnContext, item: BatchItem, done: str) -> None:
    """The clicked card redrawn as it is now, without buttons, saying what was done; left as
    it is when it is not found among the chat's recent cards."""
    conv = ctx.conversation
    message_id = str(item.payload.get("card_message_id") or "")
    async with ctx.services.db.read() as tx:
        shown = await outbox.card_on_message(tx, conv.platform, conv.chat_id, message_id)
    if shown is None:
        return
    try:
        card = Card.from_content(shown)
    except InvalidCard:  # a row of ours no longer readable: not worth failing the click for
        return
    await _redraw(ctx, item, replace(card, buttons=(), note=_note(ctx, item, done)))


def _note(ctx: TurnContext, item: BatchItem, done: str) -> str:
    when = utcnow().astimezone(ctx.services.settings.tz).strftime("%H:%M")
    return f"{done} by {item.sender_id} at {when}"


async def _redraw(ctx: TurnContext, item: BatchItem, card: Card) -> None:
    update = CardUpdate(str(item.payload.get("card_message_id") or ""), card)
    conv = ctx.conversation
    await enqueue_reply(ctx.services, conv, f"card-{item.id}", update, None, ctx.hold)

"""What one Bot turn works with: its batch of inbox items, and the one way it speaks.

Replies get idempotency keys derived from the turn's first inbox item and the reply's
ordinal, never from model output: if the process dies mid-turn, the batch is handled again
after restart and the same reply gets the same key, so the outbox (and Feishu's uuid) keep
the user from seeing it twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from bot.agent.framing import quote_data
from bot.assistant import holds, receipt
from bot.assistant.access import Role, may_use_assistant, role_with
from bot.assistant.commands import CommandRegistry
from bot.assistant.enrich import enrich
from bot.assistant.holds import TurnHold, TurnTakenOver
from bot.channels.cards import MAX_MARKDOWN, Button, Card, CardUpdate, verdict_buttons
from bot.channels.clicks import CLICK_KIND
from bot.config import Settings
from bot.services import Services
from storage.db import Together
from storage.repos import inbox, outbox
from storage.repos.reply_keys import reply_key
from storage.types import utcnow

MAX_ITEM_CHARS = 8000
# What the Bot is to do with a kind of notice, said by our code outside the quoted body (so it
# costs prompt tokens only in turns that have such a notice).
NOTICE_HINTS = {
    "finding": "From discovery, for the owner: tell them briefly if it still matters, with its "
    "evidence. You may offer to track it as a task; start one only if they agree.",
}
# What the owner's "Track as a task" click says: a request for a new task in the words WorkHub's
# gate reads as one (bot/workhub/new_task.py: a message opening with "new task:").
TRACK_REQUEST = "new task: track finding #{finding} as a task of its own"
# Markdown structure a card shows and a text message would not: headings, tables, fenced code,
# lists, links.
_STRUCTURED = re.compile(
    r"^(#{1,6} |\|.*\||```|~~~|\s{0,3}([-*+]|\d{1,3}[.)]) \S)|\[[^\]\n]+\]\([^)\s]+\)",
    re.MULTILINE,
)


@dataclass(frozen=True)
class ConversationView:
    id: int
    platform: str
    chat_id: str
    chat_type: str
    name: str | None
    peer_open_id: str | None = None  # in a DM, the person on the other side


@dataclass
class BatchItem:
    id: int
    kind: str
    payload: dict[str, Any]
    created_at: datetime
    ref: str = ""  # what the model calls it: m1, m2 … for messages, n1 … for notices
    role: Role | None = None
    listed_admin: bool = False  # its sender is in the admins table (read with the item)
    attempts: int = 0  # failed turns over it before this one
    # Lines under the message: what it carries beyond its words (bot/assistant/enrich.py).
    extra: list[str] = field(default_factory=list)
    enriched: bool = False

    @classmethod
    def of(cls, row: inbox.Pending) -> BatchItem:
        return cls(
            row.id,
            row.kind,
            dict(row.payload),
            row.created_at,
            listed_admin=row.listed_admin,
            attempts=row.attempts,
        )

    @property
    def is_click(self) -> bool:
        """A click on a card's button (bot/channels/clicks.py)."""
        return self.kind == CLICK_KIND

    @property
    def action(self) -> dict[str, str]:
        """A click's action (bot/channels/cards.py); {} for anything else."""
        action = self.payload.get("action") if self.is_click else None
        return {str(k): str(v) for k, v in action.items()} if isinstance(action, dict) else {}

    @property
    def is_answer(self) -> bool:
        """A click that is the clicker's words, a message like any: an option answering a
        question, or "Track as a task" under a finding (a request for a new task)."""
        action = self.action
        return "answer" in action or action.get("verdict") == "track"

    @property
    def is_message(self) -> bool:
        return self.kind == "user_message" or self.is_answer

    @property
    def sender_id(self) -> str:
        """Who wrote it, or clicked (ingest gives a click's item the clicker's `sender_id`)."""
        return str(self.payload.get("sender_id") or self.payload.get("operator_id") or "")

    @property
    def text(self) -> str:
        """What a message says to the bot (its @mention of the bot removed)."""
        action = self.action
        if "answer" in action:
            return action["answer"]
        if action.get("verdict") == "track":
            return TRACK_REQUEST.format(finding=action.get("finding"))
        return str(self.payload.get("addressed_text") or "")

    @property
    def message_id(self) -> str | None:
        value = self.payload.get("message_id")
        return str(value) if value else None

    def render(self, tz: Any) -> str:
        when = self.created_at.astimezone(tz).strftime("%Y-%m-%d %H:%M")
        if self.is_message:
            text = self.text or str(self.payload.get("text") or "")
            who = f"{self.sender_id} ({self.role.value if self.role else 'user'})"
            thread = " [in a thread]" if self.payload.get("thread_id") else ""
            if self.is_answer:  # said by our code, outside the person's words
                thread = (
                    " [clicked this option, answering the question you asked]"
                    if "answer" in self.action
                    else " [clicked 'Track as a task' under the finding]"
                )
            line = f"[{self.ref}] {when} {who}{thread}: {text[:MAX_ITEM_CHARS]}"
            return "\n".join([line, *self.extra])
        body = str(self.payload.get("text") or self.payload)[:MAX_ITEM_CHARS]
        hint = f" ({NOTICE_HINTS[self.kind]})" if self.kind in NOTICE_HINTS else ""
        return f"[{self.ref}] {when} {self.kind}{hint}:\n{quote_data(self.kind, body)}"


@dataclass
class TurnContext:
    services: Services
    conversation: ConversationView
    batch: list[BatchItem]
    turn_key: str
    hold: TurnHold
    sent: list[str] = field(default_factory=list)
    ended: bool = False
    pending_summary: tuple[str, int] | None = None  # (text, covered_seq) to store at commit
    shown: int = 0  # batch items given to the model by its latest call (or at the start)
    card_shown: bool = False  # the turn has a progress card (bot/assistant/progress.py)
    model_failed: bool = False  # the model failed and the user was told so: its card fails
    received: list[BatchItem] = field(default_factory=list)  # given a receipt reaction
    _counters: dict[str, int] = field(default_factory=lambda: {"m": 0, "n": 0})

    def __post_init__(self) -> None:
        for item in self.batch:
            self._assign_ref(item)
        self.shown = len(self.batch)  # only a tool claims more, and only after a model call

    def _assign_ref(self, item: BatchItem) -> None:
        prefix = "m" if item.is_message else "n"
        self._counters[prefix] += 1
        item.ref = f"{prefix}{self._counters[prefix]}"

    @property
    def thread(self) -> str | None:
        """The thread this turn answers in (a batch is one thread's, `inbox.thread_of`), or
        None for the chat itself: its history is that thread's earlier turns alone."""
        return inbox.thread_of(self.batch[0].payload) if self.batch else None

    def next_action_id(self, kind: str) -> str:
        """Stable across a re-run of the same batch, like reply keys."""
        self._counters[kind] = self._counters.get(kind, 0) + 1
        return f"{self.turn_key}:{kind}:{self._counters[kind]}"

    def render_batch(self, items: list[BatchItem]) -> str:
        tz = self.services.settings.tz
        return "\n".join(item.render(tz) for item in items)

    def render_logged(self, items: list[BatchItem]) -> tuple[str, dict[str, list[int]]]:
        """`render_batch`, with where each item's part starts and ends in it (item id ->
        [start, end]): the turn's log keeps them, so a message recalled later is redacted
        from it exactly (storage/repos/sessions.py `redacted`)."""
        tz = self.services.settings.tz
        parts, spans, at = [], {}, 0
        for item in items:
            part = item.render(tz)
            spans[str(item.id)] = [at, at + len(part)]
            parts.append(part)
            at += len(part) + 1
        return "\n".join(parts), spans

    def mark_shown(self) -> None:
        self.shown = len(self.batch)

    def unshown(self) -> list[BatchItem]:
        """Items claimed into the batch after the model's latest call (by the last step of a
        turn stopped at its step limit): no one has answered them, so the turn leaves them
        undelivered and the next turn takes them."""
        return self.batch[self.shown :]

    async def claim_new_input(self) -> list[BatchItem]:
        """Undelivered items that arrived during this turn join the turn's batch, except those
        answered without a model (a slash command, a refusal): shown to the model they would
        be mere text, so they stay for the next turn, which answers them as such."""
        known = {item.id for item in self.batch}
        settings, conv = self.services.settings, self.conversation
        # Asked by every turn that ends (`sleep`): in the grouped write of the moment (the
        # other turns' replies and ends), with the other turns' asking there, not in a read
        # transaction of its own, which cost as much as the rest of the turn's start.
        rows = await self.services.db.grouped(Together(_pending_of_each, conv.id))
        # Not an item retried after a failure: that one is tried on its own turn; nor one of
        # another thread (or of the chat, in a thread's turn): that context has its own.
        fresh = [
            BatchItem.of(row)
            for row in rows
            if row.id not in known
            and not row.attempts
            and inbox.thread_of(row.payload) == self.thread
        ]
        assign_roles(settings, conv.platform, fresh)
        fresh = [i for i in fresh if not answered_without_model(settings, conv.chat_type, i)]
        for item in fresh:
            self._assign_ref(item)
        await enrich(self.services, self.conversation, fresh)
        self.batch.extend(fresh)
        await self._receive(fresh)
        return fresh

    async def _receive(self, items: list[BatchItem]) -> None:
        """The receipt reactions of messages that joined the turn (with the other grouped
        writes of the moment); the turn's end takes them down with the others."""
        new = receipt.received(self.services.settings, self.conversation.platform, items)
        if not new:
            return
        await self.services.db.grouped(
            Together(_write_rows, receipt.reactions(self.conversation, new))
        )
        self.received.extend(new)
        self.services.notifier.wake_local(outbox.OUTBOX_TOPIC)

    async def send(
        self, text: str, reply_to: str | None = None, options: list[str] | None = None
    ) -> str:
        """`options`: the message goes as a card with a button for each; a click is the
        clicker's answer (its action names this reply's key as the question)."""
        target = self._reply_target(reply_to)
        key = reply_key(self.turn_key, len(self.sent))
        cause = self.cause()  # said on its own: the user can ask why
        shown = text if cause is None else f"{text}\n(why: /why {cause})"
        content: str | Card = shown
        finding = self._finding_told()
        if options:
            buttons = tuple(Button(o, {"answer": o, "question": key}) for o in options)
            content = Card("", shown[:MAX_MARKDOWN], buttons)
        elif finding is not None and not self.sent:  # the message telling the finding
            content = Card("", shown[:MAX_MARKDOWN], verdict_buttons(finding))
        await enqueue_reply(self.services, self.conversation, key, content, target, self.hold)
        self.sent.append(text)
        return f"sent ({len(text)} characters)"

    def cause(self) -> int | None:
        """The first notice of a turn no one asked for (a finding, a task's report, an index
        notice): `/why` shows it. None when the turn answers a message."""
        if any(item.is_message for item in self.batch) or not self.batch:
            return None
        return self.batch[0].id

    def _finding_told(self) -> int | None:
        """The discovery finding this turn tells the owner (a turn no one asked for, started
        by a finding): its first message carries the finding's buttons."""
        if self.cause() is None or self.batch[0].kind != "finding":
            return None
        finding = self.batch[0].payload.get("finding")
        return finding if isinstance(finding, int) else None

    def _reply_target(self, ref: str | None) -> BatchItem | None:
        messages = [item for item in self.batch if item.is_message]
        if ref:
            for item in messages:
                if item.ref == ref or item.message_id == ref:
                    return item
            raise LookupError(f"no message {ref!r} in this turn; use a ref like m1")
        if not messages:
            return None
        latest = messages[-1]
        # In groups and threads a reply keeps the context; in a DM a plain message reads best.
        if self.conversation.chat_type != "p2p" or latest.payload.get("thread_id"):
            return latest
        return None


def assign_roles(settings: Settings, platform: str, items: list[BatchItem]) -> None:
    for item in items:
        if item.is_message or item.is_click:
            sender = item.sender_id
            item.role = role_with(settings, platform, sender, listed_admin=item.listed_admin)


def answered_without_model(settings: Settings, chat_type: str, item: BatchItem) -> bool:
    """A slash command (or a button standing for one, or a finding's verdict), or a message
    from someone the assistant does not serve here: the Bot answers it itself (the one rule
    for a turn's start and for input claimed mid-turn)."""
    if item.is_click and not item.is_answer:
        return True
    if item.is_click and "finding" in item.action and item.sender_id != settings.owner:
        return True  # a finding's verdict is the owner's alone: refused without a model
    if not item.is_message:
        return False
    assert item.role is not None, "roles are assigned before this is asked"
    command = not item.is_answer and CommandRegistry.is_command(item.text)
    return command or not may_use_assistant(settings, item.role, chat_type)


@dataclass(frozen=True)
class _Reply:
    services: Services
    hold: TurnHold
    row: dict[str, Any]  # `outbox.enqueue_all`'s


async def enqueue_reply(
    services: Services,
    conversation: ConversationView,
    key: str,
    text: str | Card | CardUpdate,
    reply_to: BatchItem | None,
    hold: TurnHold,
) -> bool:
    """Write one reply (a card, or a card redrawn) to the outbox, if the turn still `hold`s
    its conversation (else raise TurnTakenOver); False if this key was written before."""
    content_type, content = _content(text)
    row = {
        "idempotency_key": key,
        "platform": conversation.platform,
        "chat_id": conversation.chat_id,
        "conversation_id": conversation.id,
        "content_type": content_type,
        "content": content,
        "reply_to": reply_to.message_id if reply_to else None,
        "in_thread": bool(reply_to and reply_to.payload.get("thread_id")),
    }
    # With the other turns' replies of the moment; a lost hold is an answer, not an error (an
    # error would roll the whole group back and commit each of its writes again alone).
    held, row_id = await services.db.grouped(Together(_write_replies, _Reply(services, hold, row)))
    if not held:
        raise TurnTakenOver(f"conversation {conversation.id} was taken over by another turn")
    if row_id is not None:
        services.notifier.wake_local(outbox.OUTBOX_TOPIC)
    return row_id is not None


async def _write_replies(tx: AsyncSession, replies: list[_Reply]) -> list[tuple[bool, int | None]]:
    """The replies of a group's turns: their holds checked, and those still held written,
    in one statement each; (held, the new row's id or None if its key was written before)."""
    held = await holds.check(tx, [reply.hold for reply in replies])
    rows = [reply.row for reply, ok in zip(replies, held, strict=True) if ok]
    written = await outbox.enqueue_all(tx, rows, utcnow())  # other replicas hear of it at commit
    results: list[tuple[bool, int | None]] = []
    for reply, ok in zip(replies, held, strict=True):
        # A key twice in one group (never, in practice) is written once: the first says so.
        row_id = written.pop(reply.row["idempotency_key"], None) if ok else None
        results.append((ok, row_id))
    return results


async def _write_rows(tx: AsyncSession, batches: list[list[dict[str, Any]]]) -> list[None]:
    """Outbox rows of several turns, in one statement (keys written before are skipped)."""
    await outbox.enqueue_all(tx, [row for rows in batches for row in rows], utcnow())
    return [None] * len(batches)


async def _pending_of_each(
    tx: AsyncSession, conversation_ids: list[int]
) -> list[list[inbox.Pending]]:
    found = await inbox.pending_for_conversations(tx, conversation_ids)
    return [found.get(conversation_id, []) for conversation_id in conversation_ids]


def _content(text: str | Card | CardUpdate) -> tuple[str, dict[str, Any]]:
    """Plain text, or `markdown` when the reply has Markdown structure (the channel shows it
    as such: a card on Feishu, where a table or code in a text message is pipes and
    backticks); a card with buttons, or a card redrawn, as it is."""
    if isinstance(text, Card):
        return "card", text.to_content()
    if isinstance(text, CardUpdate):
        return "card_update", text.to_content()
    if not _STRUCTURED.search(text):
        return "text", {"text": text}
    return "markdown", {"text": text}

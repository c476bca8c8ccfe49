"""Action kinds and the one door to an outward effect (`propose`).

An executor performs its action once per idempotency key (the platform de-duplicates: a
Feishu message's `uuid`, a calendar event's `idempotency_key`, a mail's Message-ID checked
before a resend) and returns a one-line result; `ActionFailed` is a permanent failure, any
other exception is retried with backoff and parked after the last try (bot/actions/worker.py).

Who may cause what (docs/design.md, "Outward actions"): nothing runs without the owner. A
proposal runs at once only when a standing permission covers it: for the owner's own request,
an `/allow KIND` of that chat or of everywhere; for anyone else, only one of that chat. Any
other proposal, the owner's or anyone's, becomes an approval card in the owner's DM and the
requester is told it waits for the owner.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any, Literal, Protocol

from bot.actions.approval import send_approval_card
from bot.actions.ledger import ACTIONS_TOPIC
from bot.assistant.access import Role, log_refusal, role_of
from bot.services import Services
from storage.models import Action
from storage.repos import actions as repo
from storage.types import utcnow

log = logging.getLogger(__name__)

Executor = Callable[[Services, Action, str], Awaitable[str]]
Describe = Callable[[dict[str, Any]], str]


class ActionFailed(Exception):
    """A permanent failure: str(exc) is the one line recorded and shown (no retry)."""


@dataclass(frozen=True)
class Kind:
    name: str
    executor: Executor
    describe: Describe  # the action in plain words; ValueError: the params are not usable


_KINDS: dict[str, Kind] = {}


def register_executor(kind: str, executor: Executor, *, describe: Describe) -> None:
    """Make `kind` proposable and runnable. Registering the same again is harmless (modules
    install their kinds from more than one entry point); a different executor is a bug."""
    known = _KINDS.get(kind)
    if known is not None and (known.executor, known.describe) != (executor, describe):
        raise ValueError(f"action kind {kind!r} registered twice")
    _KINDS[kind] = Kind(kind, executor, describe)


def kind_of(name: str) -> Kind | None:
    return _KINDS.get(name)


def kind_names() -> list[str]:
    return sorted(_KINDS)


class Where(Protocol):
    """The conversation a proposal was made in (the Bot's ConversationView fits)."""

    @property
    def id(self) -> int: ...
    @property
    def platform(self) -> str: ...
    @property
    def chat_id(self) -> str: ...


@dataclass(frozen=True)
class Proposed:
    outcome: Literal["running", "waiting", "refused"]
    line: str  # for the requester, one line
    action_id: int | None = None


def _outcome(state: str) -> Literal["running", "waiting", "refused"]:
    if state == repo.PROPOSED:
        return "waiting"
    return "running" if state in (repo.APPROVED, repo.RUNNING, repo.DONE) else "refused"


async def propose(
    services: Services,
    *,
    kind: str,
    params: dict[str, Any],
    requester: str,
    conversation: Where,
    reason: str,
    request_key: str | None = None,
) -> Proposed:
    """Write the ledger row for an outward action; it runs at once when a standing permission
    covers it, else waits for the owner's approval (a card in their DM). Refused, with no
    row, when the kind is unknown, its parameters are unusable or its daily cap is reached.
    `request_key`: the proposing request's stable id (a Bot turn's tool call); proposed
    again under it (the turn run again after a crash), the first row's state is the answer."""
    where = f"{conversation.platform}:{conversation.chat_id}"
    spec = _KINDS.get(kind)
    if spec is None:
        return Proposed("refused", f"refused: there is no action {kind!r}")
    try:
        summary = spec.describe(params)
    except ValueError as exc:
        return Proposed("refused", f"refused: {exc}")
    settings, now = services.settings, utcnow()
    if not settings.owner and conversation.platform != "console":
        return Proposed("refused", "refused: no owner is configured (MAKA_OWNER) to approve it")
    since = datetime.combine(now.astimezone(settings.tz).date(), time(), settings.tz)
    async with services.db.write() as tx:
        before = await repo.by_request(tx, request_key) if request_key else None
        if before is not None:
            return Proposed(
                _outcome(before.state),
                f"action #{before.id} was proposed before and is {before.state}: {before.summary}",
                before.id,
            )
        if await repo.count_since(tx, kind, since) >= settings.action_daily_cap:
            log_refusal(requester, f"{kind}: {summary}", where)
            return Proposed(
                "refused",
                f"refused: today's cap of {settings.action_daily_cap} {kind} actions is "
                "reached (MAKA_ACTION_DAILY_CAP)",
            )
        role = await role_of(tx, settings, conversation.platform, requester)
        # The owner's own request: this chat's permission or an everywhere one; anyone
        # else's: only this chat's (the owner allowed that kind here).
        permission = await repo.permission_for(
            tx, kind, conversation.id, exact=role is not Role.OWNER
        )
        hours = settings.action_approval_hours
        row = await repo.add(
            tx,
            kind=kind,
            params=params,
            summary=summary,
            requester=requester,
            conversation_id=conversation.id,
            reason=reason.strip()[:1000],
            expires_at=now + timedelta(hours=hours),
            now=now,
            request_key=request_key,
        )
        action_id = row.id
        if permission is not None:
            await repo.decide(
                tx,
                action_id,
                to=repo.APPROVED,
                by=f"allow #{permission.id}",
                now=now,
                permission_id=permission.id,
            )
    if permission is not None:
        await services.notifier.notify(ACTIONS_TOPIC)
        return Proposed(
            "running",
            f"running action #{action_id}: {summary} "
            f"(allowed by the owner's /allow #{permission.id})",
            action_id,
        )
    await send_approval_card(services, action_id)
    log.info("action #%s (%s) from %s in %s waits for the owner", action_id, kind, requester, where)
    return Proposed(
        "waiting",
        f"action #{action_id} waits for the owner's approval: {summary}",
        action_id,
    )

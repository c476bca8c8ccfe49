"""A turn's exclusive hold on its conversation (the Bot worker's lease), taken, checked and
given back for all the turns of a grouped write at once: one statement each, whatever the
number of turns in the group.

Every write of a turn that the user could see (a reply, the batch marked delivered) checks
the hold in its own transaction: a turn whose hold lapsed (its replica cut off from the
database longer than its liveness) may still be running when another turn takes the
conversation over, and it must then write nothing more, or both would answer the same input.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from storage.repos import leases
from storage.types import utcnow


class TurnHold(Protocol):
    """The lease `name` that `owner` holds while its turn runs, for `ttl` from each write."""

    @property
    def name(self) -> str: ...

    @property
    def owner(self) -> str: ...

    @property
    def ttl(self) -> timedelta: ...

    def lost(self) -> None:
        """Another turn has it (told when a take, check or give-back finds so)."""


class TurnTakenOver(Exception):
    """Another turn has taken the conversation over: this one stops, having written nothing
    more (the batch is the other turn's to answer)."""


async def take(tx: AsyncSession, holds: Sequence[TurnHold]) -> list[bool]:
    """Take each conversation for its turn; False where another turn has it."""
    now = utcnow()
    return await _each(holds, lambda names, h: leases.acquire_all(tx, names, h.owner, h.ttl, now))


async def check(tx: AsyncSession, holds: Sequence[TurnHold]) -> list[bool]:
    """Each still its turn's (and extended; on PostgreSQL its row stays locked to the end of
    `tx`, so no takeover commits in between); False where another turn has taken it."""
    now = utcnow()
    return await _each(holds, lambda names, h: leases.renew_all(tx, names, h.owner, h.ttl, now))


async def give_back(tx: AsyncSession, holds: Sequence[TurnHold]) -> list[bool]:
    """Give each back; False where it was no longer its turn's."""
    return await _each(holds, lambda names, h: leases.release_each(tx, names, h.owner))


async def _each(
    holds: Sequence[TurnHold],
    statement: Callable[[list[str], TurnHold], Awaitable[set[str]]],
) -> list[bool]:
    """`statement` once per owner and ttl (one, in a process), with the names it holds."""
    by_kind: dict[tuple[str, timedelta], list[TurnHold]] = {}
    for hold in holds:
        by_kind.setdefault((hold.owner, hold.ttl), []).append(hold)
    held: set[tuple[str, str]] = set()
    for (owner, _), same in by_kind.items():
        names = await statement([h.name for h in same], same[0])
        held.update((owner, name) for name in names)
    ours = [(hold.owner, hold.name) in held for hold in holds]
    for hold, is_ours in zip(holds, ours, strict=True):
        if not is_ours:
            hold.lost()
    return ours

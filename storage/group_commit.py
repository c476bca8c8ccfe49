"""Group commit: writes from many tasks, each waiting for its own result, committed together.

A caller hands in one item and gets back its own result once the transaction holding it has
committed. Items queued while a transaction runs go into the next one, up to `max_group`, so
under load many writes share one transaction, and alone a write waits for nothing but a turn
of the event loop. Two users: ingest (`bot/channels/ingest.py`: a webhook's message, stored in
one multi-row write with the others of the moment) and `Database.grouped` (the writes of the
Bot's turns and the senders: a turn's start and end, a reply into the outbox, a delivery
settled, a model call recorded; alone, each paid a whole transaction: on SQLite the single
write lock and BEGIN/COMMIT, on PostgreSQL a pooled connection held for three round trips).

SQLite has one writer at a time anyway, so one group commits at a time; PostgreSQL may run a
few side by side (`parallel`), since one alone would chain every write of the process behind
its round trips. When a group's transaction fails, each of its items is committed again
alone, so only the failing one's caller sees its error: committing an item must be safe to
repeat after a rolled-back attempt (database work in the transaction only; what follows the
commit, a local wake-up, stays with the caller). A caller that goes away leaves its write to
be committed regardless.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

I = TypeVar("I")  # noqa: E741 - an item, beside R its result
R = TypeVar("R")


@dataclass
class _Queued(Generic[I, R]):
    item: I
    done: asyncio.Future[R]


class GroupCommit(Generic[I, R]):
    def __init__(
        self,
        commit: Callable[[list[I]], Awaitable[list[R]]],
        *,
        what: str,
        max_group: int = 64,
        parallel: int = 1,
        on_group: Callable[[int], None] | None = None,
    ) -> None:
        """`commit(items)` writes the items in one transaction and returns their results in
        order; `on_group` hears each group's size (a metric)."""
        self._commit = commit
        self._what = what
        self._max_group = max_group
        self._parallel = parallel
        self._on_group = on_group
        self._queue: list[_Queued[I, R]] = []
        self._writers: set[asyncio.Task[None]] = set()

    async def run(self, item: I) -> R:
        """`item`'s result once its transaction has committed (or its error)."""
        queued: _Queued[I, R] = _Queued(item, asyncio.get_running_loop().create_future())
        self._queue.append(queued)
        # done(), not membership: a writer that just found the queue empty has ended, though
        # its removal from the set is still a scheduled callback away.
        if sum(not w.done() for w in self._writers) < self._parallel:
            writer = asyncio.create_task(self._write_queued(), name=f"group-commit {self._what}")
            self._writers.add(writer)
            writer.add_done_callback(self._writers.discard)
        return await asyncio.shield(queued.done)

    async def close(self) -> None:
        for writer in list(self._writers):
            with contextlib.suppress(Exception):
                await writer

    async def _write_queued(self) -> None:
        while self._queue:
            group = self._queue[: self._max_group]
            self._queue = self._queue[self._max_group :]
            if self._on_group is not None:
                self._on_group(len(group))
            try:
                results = await self._commit([q.item for q in group])
            except Exception as exc:
                if len(group) == 1:
                    _fail(group[0].done, exc)
                    continue
                log.warning(
                    "%s: a group of %d failed (%s); each alone", self._what, len(group), exc
                )
                for one in group:
                    await self._alone(one)
                continue
            for queued, result in zip(group, results, strict=True):
                _resolve(queued.done, result)

    async def _alone(self, queued: _Queued[I, R]) -> None:
        try:
            [result] = await self._commit([queued.item])
        except Exception as exc:
            _fail(queued.done, exc)
        else:
            _resolve(queued.done, result)


def _resolve(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():  # the caller went away (cancelled): the write stands regardless
        future.set_result(result)


def _fail(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)

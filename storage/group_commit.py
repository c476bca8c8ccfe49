"""Small writes from many tasks, committed together (`Database.grouped`).

Under load the Bot's turns and the senders each end with a one-statement write: a reply into
the outbox, a delivery settled, a model call recorded. Alone, each pays a whole transaction:
on SQLite the single write lock and BEGIN/COMMIT, on PostgreSQL a pooled connection held for
three round trips, each waiting for a turn of a busy event loop. Grouped, every write queued
while a transaction runs goes into the next one. SQLite has one writer at a time anyway, so
one transaction runs at a time; PostgreSQL runs a few side by side (`parallel`), since one
alone would chain every write of the process behind its round trips.

A caller still gets its own result, after the commit that made it durable. An operation
runs inside a shared transaction and may run twice: when the group's transaction fails (one
operation's error aborts it on PostgreSQL), each operation of it runs again alone, so only
the failing one's caller sees its error. So an operation does nothing but database work in
`tx`, and what follows the commit (a local wake-up) stays with the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

log = logging.getLogger(__name__)

T = TypeVar("T")
Operation = Callable[[AsyncSession], Awaitable[T]]
MAX_GROUP = 64  # operations in one transaction


@dataclass
class _Queued:
    operation: Operation[Any]
    done: asyncio.Future[Any]


class GroupCommit:
    def __init__(
        self,
        transaction: Callable[[], AbstractAsyncContextManager[AsyncSession]],
        parallel: int = 1,
    ) -> None:
        self._transaction = transaction
        self._parallel = parallel
        self._queue: list[_Queued] = []
        self._writers: set[asyncio.Task[None]] = set()

    async def run(self, operation: Operation[T]) -> T:
        """`operation`'s result once its transaction has committed (or its error)."""
        queued = _Queued(operation, asyncio.get_running_loop().create_future())
        self._queue.append(queued)
        # done(), not membership: a writer that just found the queue empty has ended, though
        # its removal from the set is still a scheduled callback away.
        if sum(not w.done() for w in self._writers) < self._parallel:
            writer = asyncio.create_task(self._write_queued(), name="group-commit")
            self._writers.add(writer)
            writer.add_done_callback(self._writers.discard)
        # Shielded: a caller that goes away leaves its write to be committed regardless.
        result: T = await asyncio.shield(queued.done)
        return result

    async def close(self) -> None:
        for writer in list(self._writers):
            with contextlib.suppress(Exception):
                await writer

    async def _write_queued(self) -> None:
        while self._queue:
            group, self._queue = self._queue[:MAX_GROUP], self._queue[MAX_GROUP:]
            try:
                results = await self._commit(group)
            except Exception as exc:
                if len(group) == 1:
                    _fail(group[0].done, exc)
                    continue
                log.info("a group of %d writes failed (%s): each alone", len(group), exc)
                for one in group:
                    await self._alone(one)
                continue
            for queued, result in zip(group, results, strict=True):
                _resolve(queued.done, result)

    async def _commit(self, group: list[_Queued]) -> list[Any]:
        async with self._transaction() as tx:
            return [await queued.operation(tx) for queued in group]

    async def _alone(self, queued: _Queued) -> None:
        try:
            [result] = await self._commit([queued])
        except Exception as exc:
            _fail(queued.done, exc)
        else:
            _resolve(queued.done, result)


def _resolve(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():
        future.set_result(result)


def _fail(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)

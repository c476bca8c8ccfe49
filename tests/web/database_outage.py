"""A database the test can take down: the app reaches PostgreSQL through a TCP forwarder on
loopback that the test stops (open connections reset, new ones refused: a stopped server, as
the app sees it), silences (connections accepted, never answered: a hung server), and starts
again on the same port."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.engine import make_url


class DatabaseSwitch:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = 0
        self.silent = False
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._pipes: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self.silent = False
        self._server = await asyncio.start_server(self._forward, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Down: listening ends, every open connection is reset."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._open):
            writer.transport.abort()
        self._open.clear()
        for pipe in list(self._pipes):
            pipe.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)

    async def hang(self) -> None:
        """Hung: connections are accepted and nothing is ever answered."""
        await self.stop()
        await self.start()
        self.silent = True

    def url_through(self, url: str) -> str:
        return make_url(url).set(host="127.0.0.1", port=self.port).render_as_string(False)

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open.add(writer)
        if self.silent:
            return  # kept open, never read: the client waits for an answer
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.transport.abort()
            return
        self._open.add(up_writer)
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(_pipe(source, sink))
            self._pipes.add(task)
            task.add_done_callback(self._pipes.discard)


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    except ConnectionError:
        pass
    finally:  # one side ended: so does the other
        sink.transport.abort()


@asynccontextmanager
async def switchable(url: str) -> AsyncIterator[tuple[DatabaseSwitch, str]]:
    """A switch in front of the PostgreSQL of `url`, and the URL that goes through it."""
    parsed = make_url(url)
    switch = DatabaseSwitch(parsed.host or "127.0.0.1", parsed.port or 5432)
    await switch.start()
    try:
        yield switch, switch.url_through(url)
    finally:
        await switch.stop()

"""`maka serve`: run the service until SIGTERM or SIGINT, then drain."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import errno
import gc
import logging
import os
import signal
import socket
import sys

from aiohttp import web

from bot.config import Role, Settings
from storage.db import create_database

log = logging.getLogger(__name__)

M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)
MALLOC_ARENAS = 2
# Objects allocated (less those freed) between two young collections; CPython's default is
# 700. At 700 each young collection found the objects of every turn and request in flight
# still alive and moved them on, which kept the older collections busy: in a sustained run of
# 1,500 inputs (benchmarks/conversations.py), 600 young and 54 middle collections and 4 full
# ones, 0.76 s of the process's 12 s of CPU. At 20,000: 7 young collections, 0.13 s (a
# collection costs about what is alive, ~15 ms whether 10,000 or 20,000 apart). Most objects
# die young, by their reference counts, before one sees them; cycles go at the next one.
YOUNG_COLLECTION_EVERY = 20_000


def limit_malloc_arenas() -> None:
    """Cap glibc's malloc arenas before any thread starts. Each thread that allocates (the
    database driver's, the search writer's, `asyncio.to_thread`'s) otherwise gets an arena of
    its own, up to eight per core, and their memory stays mapped: under steady traffic the
    soak saw an idle-looking process grow from 284 to 333 MB in eight minutes, and with two
    arenas it stayed flat. The same as MALLOC_ARENA_MAX=2; an operator's own MALLOC_ARENA_MAX
    is left as set. No-op off glibc."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return
    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # musl or another libc: nothing to tune
        return
    mallopt(M_ARENA_MAX, MALLOC_ARENAS)


async def freeze_start_up_heap() -> None:
    """Once start-up is over, put what it made out of the garbage collector's reach. A full
    collection otherwise walks all of it (modules, the tokenizer's dictionary: some 220,000
    objects), about 100 ms with the event loop stopped each time, every few seconds under
    load. Objects of it that fall out of use are still freed by their reference counts; only
    cycles among them would stay, so the heap is collected once first. From then on, young
    collections come every `YOUNG_COLLECTION_EVERY` allocations."""
    from storage.search.tokenizer import warm_up

    await asyncio.to_thread(warm_up)  # the runtime's own warm-up is under way: this waits for it
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, middle, old)
    log.info("start-up heap kept out of garbage collection: %d objects", gc.get_freeze_count())


async def until_stop_signal() -> None:
    """Return when SIGTERM or SIGINT arrives (the process then shuts down in order)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


async def serve(settings: Settings, role: Role) -> int:
    """0 once drained after a stop signal; 1 when the address cannot be listened on, said in
    one line before the service starts (or, if the port was taken only after the check,
    once the service started for it has stopped again)."""
    db = create_database(settings.resolved_database_url)
    try:  # an unusable database fails in one line (DatabaseNotReady), before the long imports
        await db.reach()
    finally:
        await db.dispose()
    unusable = address_problem(settings.http_host, settings.http_port)
    if unusable is not None:  # said before anything starts (the common case)
        print(cannot_listen(settings, unusable), file=sys.stderr)
        return 1
    from bot.runtime import create_app

    app = create_app(settings, role)
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()  # runs the cleanup context's start-up half
    site = web.TCPSite(runner, settings.http_host, settings.http_port)
    try:
        await site.start()
    except OSError as exc:  # taken since address_problem looked
        await runner.cleanup()
        print(cannot_listen(settings, exc), file=sys.stderr)
        return 1
    print(f"maka serving on http://{settings.http_host}:{settings.http_port} (role {role})")
    frozen = asyncio.create_task(freeze_start_up_heap(), name="freeze-start-up-heap")

    await until_stop_signal()
    await frozen
    log.info("signal received: draining (grace %.0fs)", settings.shutdown_grace)
    await runner.cleanup()  # stops accepting, then the Host drains and releases claims
    return 0


def address_problem(host: str, port: int) -> OSError | None:
    """Why `host:port` cannot be listened on, found by binding each of its addresses as the
    server will (SO_REUSEADDR, IPv6 sockets IPv6 only) and letting go again; None if it can.
    The server's own bind may still fail, if another process takes the port meanwhile."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        for family, kind, proto, _, address in infos:
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                probe.bind(address)
    except OSError as exc:
        return exc
    return None


def cannot_listen(settings: Settings, exc: OSError) -> str:
    """One line for an address `maka serve` cannot listen on, naming the settings to change."""
    if isinstance(exc, socket.gaierror):
        why = f"{settings.http_host!r} is no address this machine knows ({exc.strerror})"
    elif exc.errno == errno.EADDRINUSE:
        why = "the port is taken (another `maka serve`?)"
    elif exc.errno is not None:
        why = os.strerror(exc.errno)
    else:
        why = str(exc)
    return (
        f"MAKA_HTTP_HOST/MAKA_HTTP_PORT: cannot listen on "
        f"{settings.http_host}:{settings.http_port}: {why}"
    )

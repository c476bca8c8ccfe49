"""Ending a child process the service started (the file reader's sandbox, ffmpeg), so that it
is killed and reaped even when its output stopped being read.

asyncio's `Process.wait()` returns only once every pipe of the child has closed, and a pipe
whose reader stopped (at a cap: a flood, audio over its length) is paused with a full buffer:
it never sees its end, and the wait hangs (it did, in CI). So what the killed child left in
its pipes is read to their end first, bounded by `END_SECONDS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal

log = logging.getLogger(__name__)

# How long a killed child's pipes may take to close: at once, unless something outside its
# process group still holds them.
END_SECONDS = 10.0
READ_SIZE = 64 * 1024


async def end_child(child: asyncio.subprocess.Process, *, group: bool = False) -> None:
    """Kill `child` (its whole process group with `group`: it was started in a session of
    its own) unless it has ended, drain its pipes and reap it."""
    if group:  # also after the child's own end: a process it started may outlive it
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)
    elif child.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            child.kill()
    try:
        async with asyncio.timeout(END_SECONDS):
            for stream in (child.stdout, child.stderr):
                if stream is not None:
                    while await stream.read(READ_SIZE):
                        pass
            with contextlib.suppress(ProcessLookupError):
                await child.wait()
    except TimeoutError:  # killed; a pipe some escaped process still holds is let go
        log.warning("child process %s: its pipes did not close after the kill", child.pid)

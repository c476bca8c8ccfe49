"""CPU of the processes a benchmark starts, read from /proc: `maka serve` replicas, a private
PostgreSQL cluster (the postmaster and its backends), and the benchmark itself."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.faults.harness import FaultWorld
from tests.faults.postgres import PrivateCluster

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int, *, reaped: bool = False) -> tuple[float, int] | None:
    """(user + system CPU seconds, parent pid) of `pid`, with (`reaped`) its children's that
    have exited and been waited for; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    ticks = int(fields[11]) + int(fields[12])
    if reaped:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / TICK, int(fields[1])


def postgres_pids(cluster: PrivateCluster) -> list[int]:
    """The postmaster and its children (backends, writers)."""
    try:
        postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return []
    pids = [postmaster]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (found := cpu_seconds(int(entry.name))) is not None:
            if found[1] == postmaster:
                pids.append(int(entry.name))
    return pids


class CpuMeter:
    """CPU of the replicas, PostgreSQL and this process between `__init__` and `shares()`."""

    def __init__(self, world: FaultWorld) -> None:
        self.world = world
        self.wall = time.monotonic()
        self.ours = time.process_time()
        self.started = self._replicas()
        self.postgres = self._postgres()

    def _replicas(self) -> list[float | None]:
        """Each replica's CPU seconds, in `world.replicas` order (None: it is not running)."""
        seconds: list[float | None] = []
        for replica in self.world.replicas:
            found = cpu_seconds(replica.pid) if replica.pid is not None else None
            seconds.append(found[0] if found else None)
        return seconds

    def _used(self) -> list[float | None]:
        """Each replica's CPU seconds since `__init__`."""
        return [
            None if now is None or then is None else now - then
            for now, then in zip(self._replicas(), self.started, strict=True)
        ]

    def replica_seconds(self) -> float | None:
        """Every replica's CPU seconds together (one replica but in `--topology split`)."""
        return _together(self._used())

    def _postgres(self) -> dict[int, float]:
        if not isinstance(self.world.database, PrivateCluster):
            return {}
        pids = postgres_pids(self.world.database)
        # The postmaster's own count includes the backends that exited meanwhile (a pool's
        # overflow connections close when given back): without it they went uncounted.
        return {
            pid: found[0]
            for pid in pids
            if (found := cpu_seconds(pid, reaped=pid == pids[0])) is not None
        }

    def shares(self) -> dict[str, float | None]:
        wall = time.monotonic() - self.wall
        replicas = self._used()
        together = _together(replicas)
        shares: dict[str, float | None] = {
            "maka": None if together is None else 100 * together / wall,
            "bench": 100 * (time.process_time() - self.ours) / wall,
        }
        if len(replicas) > 1:  # split: the share of each process, by its role
            for replica, seconds in zip(self.world.replicas, replicas, strict=True):
                shares[replica.role] = None if seconds is None else 100 * seconds / wall
        if isinstance(self.world.database, PrivateCluster):
            now = self._postgres()
            used = sum(now[p] - self.postgres.get(p, 0.0) for p in now)
            shares["pg"] = 100 * used / wall
        return shares


def _together(seconds: list[float | None]) -> float | None:
    """The sum, or None when any is unknown."""
    return None if any(s is None for s in seconds) else sum(s for s in seconds if s is not None)

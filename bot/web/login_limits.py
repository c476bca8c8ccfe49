"""How many wrong admin tokens may be tried: per client address, and by everyone together.

Every guess counts, through any door: the console's login, the status page's login form, and
a bearer token on any admin call. Past a client's limit its tries are refused (HTTP 429 with
Retry-After) until its oldest wrong try is a window old, whether or not the token it sends
is right (else the limit would tell a right guess apart); past the overall limit, a guessing
crowd of addresses, everyone's are. The session cookie proves a token given earlier and is
no guess: it is not counted, and it keeps working while logins are refused.

Only wrong tries are remembered, at most `overall` a window, so memory stays bounded however
many addresses guess. The clock is injectable: tests move time, they never wait for it.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web

PER_CLIENT = 5  # wrong tokens one address may try per window
OVERALL = 30  # wrong tokens all addresses together may try per window
WINDOW = 60.0  # seconds


@dataclass
class LoginLimits:
    per_client: int = PER_CLIENT
    overall: int = OVERALL
    window: float = WINDOW
    clock: Callable[[], float] = time.monotonic
    _by_client: dict[str, deque[float]] = field(default_factory=dict)
    _everyone: deque[float] = field(default_factory=deque)

    def wait(self, client: str) -> float | None:
        """Seconds before `client` may try a token again; None when it may now."""
        now = self.clock()
        self._forget_before(now - self.window)
        waits = []
        mine = self._by_client.get(client)
        if mine is not None and len(mine) >= self.per_client:
            waits.append(mine[0] + self.window - now)
        if len(self._everyone) >= self.overall:
            waits.append(self._everyone[0] + self.window - now)
        return max(waits) if waits else None

    def failed(self, client: str) -> None:
        now = self.clock()
        self._by_client.setdefault(client, deque()).append(now)
        self._everyone.append(now)

    def succeeded(self, client: str) -> None:
        self._by_client.pop(client, None)

    def refuse_if_waiting(self, client: str) -> None:
        """HTTP 429 with Retry-After while `client` must wait."""
        wait = self.wait(client)
        if wait is not None:
            seconds = max(1, math.ceil(wait))
            raise web.HTTPTooManyRequests(
                text=f"too many wrong tokens: try again in {seconds} s",
                headers={"Retry-After": str(seconds)},
            )

    def _forget_before(self, cutoff: float) -> None:
        while self._everyone and self._everyone[0] <= cutoff:
            self._everyone.popleft()
        for client in [c for c, tries in self._by_client.items() if tries[-1] <= cutoff]:
            del self._by_client[client]
        for tries in self._by_client.values():
            while tries[0] <= cutoff:
                tries.popleft()


LOGIN_LIMITS = web.AppKey("login_limits", LoginLimits)

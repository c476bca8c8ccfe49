"""The one retry policy: every outbound call that may be retried goes through `retrying`.

Callers decide *what* is retryable; this module decides *how* to wait. An exception may carry
a server-given delay (`retry_after`, in seconds), which wins over the backoff, because the
server knows when its window reopens (Feishu's `x-ogw-ratelimit-reset`, HTTP `Retry-After`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

T = TypeVar("T")


def server_hinted_wait(
    initial: float = 0.5, maximum: float = 30.0
) -> Callable[[RetryCallState], float]:
    # Jitter scaled to the first wait, so replicas that failed together do not retry together.
    backoff = wait_exponential(multiplier=initial, max=maximum) + wait_random(0, initial)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        hint = getattr(exc, "retry_after", None)
        if isinstance(hint, int | float) and hint >= 0:
            return min(float(hint), maximum)
        return min(backoff(state), maximum)

    return wait


def retrying(
    is_retryable: Callable[[BaseException], bool],
    *,
    attempts: int = 5,
    initial_wait: float = 0.5,
    max_wait: float = 30.0,
) -> AsyncRetrying:
    """`async for attempt in retrying(...): with attempt: ...`; retries only what the caller
    names as retryable."""
    return AsyncRetrying(
        retry=retry_if_exception(is_retryable),
        stop=stop_after_attempt(attempts),
        wait=server_hinted_wait(initial_wait, max_wait),
        reraise=True,
    )


async def retry_call(
    call: Callable[[], Awaitable[T]],
    is_retryable: Callable[[BaseException], bool],
    *,
    attempts: int = 4,
    max_wait: float = 60.0,
) -> T:
    """`call()` under `retrying`: for code that is handed a retry as a function (a source's
    Feishu client, which may not import this module)."""
    async for attempt in retrying(is_retryable, attempts=attempts, max_wait=max_wait):
        with attempt:
            return await call()
    raise AssertionError("retrying ends in a return or a raise")

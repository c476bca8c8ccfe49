"""Steady webhook traffic, delivered the way Feishu delivers: every message is an event POSTed
to a replica's real webhook (alternating, as a load balancer would), and anything but a 2xx
(an error status, a refused connection, no answer in time) is delivered again, to the other
replica, until one answers 2xx. Every attempt is written down, so the end checks can hold the
webhook to its word: a 2xx means the event is stored.

Beyond the DMs of `run()`: `send_message()` sends any text to any chat (a group, an @mention
of the bot), and `redeliver()` delivers an event again after it was accepted, as Feishu's
at-least-once delivery does (the soak, tests/soak/)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import Counter
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from tests.fakes import FeishuEventSender, FeishuFake, HistoryMessage, Mention
from tests.faults.model import ping
from tests.faults.processes import MakaProcess

FEISHU_TIMEOUT = 3.0  # Feishu waits this long for a webhook's answer before redelivering
REDELIVER_AFTER = 0.3  # (Feishu waits longer; the suite has no time to lose)
DELIVERY_DEADLINE = 90.0


@dataclass
class Attempt:
    token: str
    replica: str
    at: float
    status: int | None  # None: no HTTP answer (refused, reset, timed out)
    detail: str
    started: float | None = None  # when the POST began (`at` is when it ended)
    redelivery: bool = False  # a delivery again of an event already sent (`redeliver()`)

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def took(self) -> float | None:
        """Seconds from the POST to its answer (or to giving up on one)."""
        return self.at - self.started if self.started is not None else None


@dataclass
class Input:
    token: str
    user: str
    chat_id: str
    message_id: str
    event: dict[str, Any]
    sent_at: float
    accepted_at: float | None = None
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def first_ack(self) -> float | None:
        """When a replica first answered 2xx for it (a redelivery's included)."""
        return min((a.at for a in self.attempts if a.ok), default=None)


class Traffic:
    """`await traffic.run(rate, seconds)`; then `inputs`, `attempts` and the checks."""

    def __init__(
        self,
        fake: FeishuFake,
        events: FeishuEventSender,
        replicas: Sequence[MakaProcess],
        users: Sequence[str],
        *,
        prefix: str = "fx",
    ) -> None:
        self.fake = fake
        self.events = events
        self.replicas = list(replicas)
        self.users = list(users)
        self.prefix = prefix
        self.inputs: dict[str, Input] = {}
        self.attempts: list[Attempt] = []
        self._numbers = itertools.count(1)
        self._deliveries: set[asyncio.Task[None]] = set()
        self._http: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Traffic:
        self._http = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=FEISHU_TIMEOUT),
            connector=aiohttp.TCPConnector(limit=0, force_close=True),
        )
        return self

    async def __aexit__(self, *_: object) -> None:
        for task in self._deliveries:
            task.cancel()
        for task in list(self._deliveries):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._http is not None:
            await self._http.close()

    # --- sending ---------------------------------------------------------------------------
    async def run(self, rate: float, seconds: float) -> None:
        """New messages at `rate` a second for `seconds` (each delivered in the background)."""
        interval = 1.0 / rate
        start = time.monotonic()
        for n in range(round(rate * seconds)):
            pause = start + n * interval - time.monotonic()
            if pause > 0:
                await asyncio.sleep(pause)
            self.send_one()

    def send_one(self) -> Input:
        number = next(self._numbers)
        token = f"{self.prefix}-{number:04d}"
        user = self.users[number % len(self.users)]
        chat_id = dm_chat(user)
        event = self.events.message_event(
            text=ping(token), chat_id=chat_id, chat_type="p2p", sender_open_id=user
        )
        message = event["event"]["message"]
        self.fake.add_history(  # as Feishu has it, so a reply to it finds its target
            chat_id,
            [
                HistoryMessage.text(
                    ping(token),
                    create_time=int(message["create_time"]) / 1000,
                    sender_open_id=user,
                    message_id=message["message_id"],
                )
            ],
        )
        item = Input(token, user, chat_id, message["message_id"], event, time.monotonic())
        self.inputs[token] = item
        task = asyncio.create_task(self._deliver(item, number), name=f"deliver-{token}")
        self._deliveries.add(task)
        task.add_done_callback(self._deliveries.discard)
        return item

    async def _deliver(self, item: Input, number: int) -> None:
        assert self._http is not None
        deadline = item.sent_at + DELIVERY_DEADLINE
        for attempt in itertools.count():
            replica = self.replicas[(number + attempt) % len(self.replicas)]
            record = await self._attempt(item, replica)
            if record.ok:
                item.accepted_at = record.at
                return
            if time.monotonic() > deadline:
                return  # `undelivered()` reports it
            await asyncio.sleep(REDELIVER_AFTER)

    async def _attempt(
        self, item: Input, replica: MakaProcess, *, redelivery: bool = False
    ) -> Attempt:
        """POST `item`'s event to `replica` once; the attempt, written down."""
        assert self._http is not None
        raw, headers = self.events.encode(item.event)
        status: int | None = None
        started = time.monotonic()
        try:
            async with self._http.post(replica.webhook, data=raw, headers=headers) as resp:
                status, detail = resp.status, (await resp.text())[:200]
        except (aiohttp.ClientError, TimeoutError) as exc:
            detail = f"{type(exc).__name__}: {exc}"
        record = Attempt(
            item.token, replica.name, time.monotonic(), status, detail, started, redelivery
        )
        item.attempts.append(record)
        self.attempts.append(record)
        return record

    def send_message(
        self,
        text: str,
        *,
        user: str,
        chat_id: str,
        chat_type: str = "p2p",
        mentions: Sequence[Mention] = (),
        token: str | None = None,
    ) -> Input:
        """One new message `text` from `user` in `chat_id` (which the fake must know), as an
        event delivered in the background like `send_one()`'s. To @mention the bot put
        "@_user_1" in `text` and the bot's Mention first in `mentions`. `token` names the
        input in `inputs` (default: the next `<prefix>-<n>`)."""
        number = next(self._numbers)
        token = token or f"{self.prefix}-{number:04d}"
        if token in self.inputs:
            raise ValueError(f"input {token} exists")
        event = self.events.message_event(
            text=text,
            chat_id=chat_id,
            chat_type=chat_type,
            sender_open_id=user,
            mentions=list(mentions) or None,
        )
        message = event["event"]["message"]
        self.fake.add_history(
            chat_id,
            [
                HistoryMessage.text(
                    text,
                    create_time=int(message["create_time"]) / 1000,
                    sender_open_id=user,
                    message_id=message["message_id"],
                )
            ],
        )
        item = Input(token, user, chat_id, message["message_id"], event, time.monotonic())
        self.inputs[token] = item
        self._start(self._deliver(item, number), f"deliver-{token}")
        return item

    async def send_message_and_wait(
        self, text: str, *, user: str, chat_id: str, token: str | None = None
    ) -> Input:
        """`send_message()`, then wait until that message's delivery is over (a replica
        answered 2xx, or the delivery gave up): a closed-loop sender keeps a fixed number of
        deliveries in flight this way (benchmarks/conversations.py)."""
        item = self.send_message(text, user=user, chat_id=chat_id, token=token)
        name = f"deliver-{item.token}"
        await next(t for t in self._deliveries if t.get_name() == name)
        return item

    def redeliver(self, item: Input, *, after: float = 0.0) -> None:
        """Deliver `item`'s event again (same event, same message_id) in `after` seconds, to
        any replica, until one answers 2xx: Feishu delivers at least once, and again when an
        answer was slow. The attempts join `item.attempts` marked `redelivery`; `accepted_at`
        stays the first delivery's."""
        self._start(self._deliver_again(item, after), f"redeliver-{item.token}")

    def _start(self, work: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(work, name=name)
        self._deliveries.add(task)
        task.add_done_callback(self._deliveries.discard)

    async def _deliver_again(self, item: Input, after: float) -> None:
        await asyncio.sleep(after)
        start = time.monotonic()
        for attempt in itertools.count(len(item.attempts)):
            replica = self.replicas[attempt % len(self.replicas)]
            record = await self._attempt(item, replica, redelivery=True)
            if record.ok or time.monotonic() > start + DELIVERY_DEADLINE:
                return
            await asyncio.sleep(REDELIVER_AFTER)

    async def drain(self, timeout: float = DELIVERY_DEADLINE + 10) -> None:
        """Wait until every message has been answered 2xx by a replica (or given up)."""
        try:
            async with asyncio.timeout(timeout):
                while self._deliveries:
                    await asyncio.wait(set(self._deliveries))
        except TimeoutError:
            raise AssertionError(
                f"{len(self._deliveries)} deliveries still running after {timeout:.0f}s"
            ) from None

    # --- what happened -----------------------------------------------------------------------
    def undelivered(self) -> list[str]:
        return [t for t, i in self.inputs.items() if i.accepted_at is None]

    def statuses(self) -> Counter[str]:
        return Counter(
            str(a.status) if a.status is not None else "no answer" for a in self.attempts
        )

    def attempts_since(self, at: float) -> list[Attempt]:
        return [a for a in self.attempts if a.at >= at]

    def by_message_id(self) -> dict[str, Input]:
        return {i.message_id: i for i in self.inputs.values()}


def dm_chat(user: str) -> str:
    return f"oc_dm_{user}"

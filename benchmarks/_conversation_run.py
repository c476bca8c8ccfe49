"""One run of benchmarks/conversations.py: new people write DMs through the real webhook
(closed loop, open loop or all at once), the run settles under the fault suite's verdict, and
its figures are read from the stand-ins and the database."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from _conversation_plan import BenchFailure, Plan, Result
from _cpu import CpuMeter

from tests.faults.harness import FaultWorld
from tests.faults.model import answered_token, ping
from tests.faults.traffic import Traffic, dm_chat

SETTLE_TIMEOUT = 300.0  # seconds for a run's replies once its sending is over


def new_users(world: FaultWorld, tag: str, count: int) -> list[str]:
    users = [f"ou_bench_{tag}_{n:03d}" for n in range(count)]
    for user in users:
        world.feishu.add_chat(dm_chat(user), name="", chat_type="p2p", p2p_user=user)
    return users


async def closed_loop(traffic: Traffic, order: Sequence[tuple[str, str]], senders: int) -> None:
    """`senders` loops, each sending its next message once the last one is answered 2xx."""
    queue: Iterator[tuple[str, str]] = iter(order)

    async def sender() -> None:
        for user, token in queue:
            await traffic.send_message_and_wait(
                ping(token), user=user, chat_id=dm_chat(user), token=token
            )

    await asyncio.gather(*(sender() for _ in range(min(senders, len(order)))))


async def open_loop(traffic: Traffic, order: Sequence[tuple[str, str]], rate: float) -> None:
    """Each message at its own moment, `rate` a second, whether or not the ones before it
    were answered: a platform pushing events, not senders that wait for each answer."""
    start = time.monotonic()
    for number, (user, token) in enumerate(order):
        delay = start + number / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        traffic.send_message(ping(token), user=user, chat_id=dm_chat(user), token=token)


async def measure(
    world: FaultWorld, database: str, plan: Plan, *, senders: int, concurrency: int
) -> Result:
    world.model.slow(plan.latency)
    users = new_users(world, plan.tag, plan.conversations)
    order = [
        (user, f"{plan.tag}-c{n:03d}-m{m}")
        for m in range(plan.messages)
        for n, user in enumerate(users)
    ]
    steps_before, other_before = world.model.bot_requests, world.model.other_requests
    wall_start = datetime.now(UTC)
    offset = time.time() - time.monotonic()  # monotonic -> wall clock (the database's)
    async with world.traffic(plan.tag, users=tuple(users)) as traffic:
        cpu = CpuMeter(world)
        start = time.monotonic()
        if plan.burst:
            for user, token in order:
                traffic.send_message(ping(token), user=user, chat_id=dm_chat(user), token=token)
        elif plan.rate:
            await open_loop(traffic, order, plan.rate)
        else:
            await closed_loop(traffic, order, senders)
        try:
            verdict = await world.settle(traffic, timeout=SETTLE_TIMEOUT)
        except AssertionError as exc:  # a delivery or the replies never settled
            raise BenchFailure(f"{database} {plan.shape} at {plan.latency:g} s: {exc}") from None
        shares, maka_cpu = cpu.shares(), cpu.replica_seconds()
    problems = verdict.problems()
    if problems:
        raise BenchFailure(
            "\n".join(
                [
                    f"{database} {plan.shape} at {plan.latency:g} s: the verdict is not clean",
                    verdict.summary(),
                    *problems,
                    world.logs(),
                ]
            )
        )
    inputs = traffic.inputs
    replied: dict[str, float] = {}  # token -> when its (first) reply was created
    for message in world.feishu.sent:
        answer = answered_token(message.text or "")
        at = world.feishu.created_at.get(message.message_id)
        if answer is not None and answer in inputs and at is not None:
            replied[answer] = min(replied.get(answer, at), at)
    accepted = {t: i.accepted_at for t, i in inputs.items() if i.accepted_at is not None}
    outbox: dict[str, float] = {}  # token -> when its reply's outbox row was written
    for row in await world.query(
        "SELECT content->>'text' AS text, created_at FROM outbox WHERE created_at >= $1",
        wall_start,
    ):
        answer = answered_token(row["text"] or "")
        if answer is not None and answer in inputs:
            outbox[answer] = row["created_at"].timestamp()
    turn_rows = await world.query(
        "SELECT payload->>'message_id' AS message_id, batch_id FROM inbox_items"
        " WHERE kind = 'user_message' AND created_at >= $1",
        wall_start,
    )
    ours = {i.message_id for i in inputs.values()}
    turns = {r["batch_id"] for r in turn_rows if r["message_id"] in ours and r["batch_id"]}
    calls = await world.query(
        "SELECT created_at, latency_ms FROM model_calls"
        " WHERE purpose = 'bot_turn' AND created_at >= $1",
        wall_start,
    )
    world.model.log.clear()  # every request's body, prompts and all: not needed
    return Result(
        database=database,
        plan=plan,
        inputs=len(accepted),
        sending=max(accepted.values()) - start,
        answered=max(replied.values()) - start,
        replies=len(replied),
        ack_times=[t for a in traffic.attempts if a.ok and (t := a.took) is not None],
        reply_delays=[at - accepted.get(t, start) for t, at in replied.items()],
        queued=[outbox[t] - (accepted[t] + offset) for t in outbox if t in accepted],
        sent=[replied[t] + offset - outbox[t] for t in outbox if t in replied],
        turns=len(turns),
        steps=world.model.bot_requests - steps_before,
        other_calls=world.model.other_requests - other_before,
        peak_calls=peak_overlap(
            [
                (r["created_at"].timestamp(), r["created_at"].timestamp() + r["latency_ms"] / 1e3)
                for r in calls
            ]
        ),
        not_2xx=sum(1 for a in traffic.attempts if not a.ok),
        cpu=shares,
        maka_cpu=maka_cpu,
        concurrency=concurrency,
    )


def peak_overlap(spans: Sequence[tuple[float, float]]) -> int:
    """The most spans (start, end) open at one moment."""
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])  # ends first
    peak = running = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    return peak

"""What one run of benchmarks/conversations.py is (`Plan`), what it measured (`Result`), and
the targets it is judged against (issue 19, "done when")."""

from __future__ import annotations

from dataclasses import dataclass

NAME = "conversations"
CALLS_PER_TURN = 1  # the model stand-in's turn: send_user for every input, then sleep
BURST_LATENCY = 1.0
# Targets (issue 19, "done when").
REPLIES_PER_ACK = 0.5
PG_ACKS_OF_SQLITE = 0.9
BURST_WITHIN = 15.0
BURST_SIZE = 100  # the size the burst target is stated for


@dataclass(frozen=True)
class Plan:
    latency: float
    conversations: int
    messages: int
    burst: bool = False  # all at once, not closed loop
    name: str = ""  # the users' and tokens' tag (default: from the latency)
    rate: float = 0.0  # messages a second, open loop (0: closed loop)
    round: int = 0  # which of the judged shape's rounds (0: it runs once)

    @property
    def tag(self) -> str:
        if self.name:
            return self.name
        if self.burst:
            return f"b{self.latency:g}"
        run = f"l{self.latency:g}-{self.conversations}x{self.messages}"  # two may share a latency
        run = f"{run}-k{self.round}" if self.round else run
        return f"r{self.rate:g}-{run}" if self.rate else run

    @property
    def judged(self) -> bool:
        """The targets' shape: closed loop, instant model, one message per conversation
        (the issue's `wrk -c32` run, one new DM per request)."""
        return not self.burst and not self.rate and self.latency == 0 and self.messages == 1

    @property
    def shape(self) -> str:
        if self.burst:
            return f"{self.conversations} at once"
        if self.rate:
            return f"{self.conversations}×{self.messages}@{self.rate:g}/s"
        return f"{self.conversations}×{self.messages}"


@dataclass
class Result:
    database: str
    plan: Plan
    inputs: int
    sending: float  # first send to last 2xx
    answered: float  # first send to last reply created
    replies: int
    ack_times: list[float]  # per 2xx attempt: POST to answer
    reply_delays: list[float]  # per input: 2xx to reply created
    queued: list[float]  # per input: 2xx to its reply's outbox row
    sent: list[float]  # per input: outbox row to reply created
    turns: int
    steps: int
    other_calls: int
    peak_calls: int
    not_2xx: int  # attempts answered otherwise (then delivered again)
    cpu: dict[str, float | None]  # % of one core over the run
    maka_cpu: float | None  # CPU seconds of `maka serve` over the run
    concurrency: int

    @property
    def cpu_ms_per_input(self) -> float | None:
        """`maka serve`'s CPU per input, its ack and its reply together: what bounds the
        rates on a busy core, and steadier than they are when the machine is shared."""
        return None if self.maka_cpu is None else 1000 * self.maka_cpu / max(1, self.inputs)

    @property
    def acks_per_s(self) -> float:
        return self.inputs / self.sending if self.sending > 0 else 0.0

    @property
    def replies_per_s(self) -> float:
        return self.replies / self.answered if self.answered > 0 else 0.0

    @property
    def ideal_per_s(self) -> float | None:
        """Concurrency ÷ latency: a full turn pool, one reply per model call."""
        return self.concurrency / self.plan.latency if self.plan.latency > 0 else None

    @property
    def vs_ideal(self) -> float | None:
        ideal = self.ideal_per_s
        return self.replies_per_s / ideal if ideal else None


class BenchFailure(Exception):
    """A run whose verdict is not clean: its figures mean nothing."""

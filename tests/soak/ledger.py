"""What the soak expects of each input, and what the Feishu stand-in shows happened.

An input is one of:
- a DM, a group message that @mentions the bot, or a long message (several KB): the model
  stand-in answers it with a reply naming its token (`pong <token>`), once;
- a slash command (/help, /whoami, /status), in a DM or @mentioning the bot in a group:
  answered without a model, by one reply to the command's own message;
- a group message that does not @mention the bot: stored as history, never answered.

A redelivery (the same event again) is no new input: its input is still answered once.

Lost: an input that should be answered, accepted (a 2xx from a replica), and not answered;
while traffic runs, one not answered `grace` seconds after its acceptance. Duplicated: one
answered more than once. A history message that gets an answer is "unwanted".
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from bot.assistant.turn import MODEL_FAILED_REPLY as MODEL_FAILED
from tests.fakes import SentMessage
from tests.faults.model import answered_token
from tests.faults.traffic import Input


class Expect(StrEnum):
    MODEL = "model"  # a reply naming its token
    COMMAND = "command"  # one reply to the message itself
    NONE = "none"  # history: no reply at all


class Kind(StrEnum):
    DM = "dm"
    MENTION = "mention"  # a group message @mentioning the bot
    HISTORY = "history"  # a group message that does not
    COMMAND = "command"
    LONG = "long"

    @property
    def expect(self) -> Expect:
        if self is Kind.COMMAND:
            return Expect.COMMAND
        return Expect.NONE if self is Kind.HISTORY else Expect.MODEL


@dataclass
class Answer:
    token: str
    created_at: float  # when the Feishu stand-in created the reply (time.monotonic())
    latency: float | None  # seconds from the input's first 2xx to `created_at`


@dataclass
class Ledger:
    inputs: dict[str, Input]  # the traffic's, by token
    kinds: dict[str, Kind] = field(default_factory=dict)
    answers: Counter[str] = field(default_factory=Counter)
    first_answers: list[Answer] = field(default_factory=list)  # in order of creation
    apologies: list[SentMessage] = field(default_factory=list)
    strays: list[SentMessage] = field(default_factory=list)  # answering no input of ours
    _by_message: dict[str, str] = field(default_factory=dict)  # message_id -> token
    _read: int = 0  # how many of the stand-in's sent messages are counted

    def add(self, item: Input, kind: Kind) -> None:
        self.kinds[item.token] = kind
        self._by_message[item.message_id] = item.token

    def expect(self, token: str) -> Expect:
        return self.kinds[token].expect

    def update(self, sent: Sequence[SentMessage], created_at: dict[str, float]) -> None:
        """Count the messages Feishu created since the last update."""
        for message in sent[self._read :]:
            self._count(message, created_at.get(message.message_id))
        self._read = len(sent)

    def _count(self, message: SentMessage, at: float | None) -> None:
        text = message.text or ""
        token = answered_token(text)
        if token not in self.kinds:
            token = None
            replied = self._by_message.get(message.reply_to or "")
            if text == MODEL_FAILED:
                self.apologies.append(message)
            elif replied is not None and self.expect(replied) is Expect.COMMAND:
                token = replied
            else:
                self.strays.append(message)
        if token is None:
            return
        self.answers[token] += 1
        if self.answers[token] == 1 and at is not None:
            ack = self.inputs[token].first_ack
            self.first_answers.append(Answer(token, at, at - ack if ack is not None else None))

    # --- the counts ------------------------------------------------------------------------
    def addressed(self) -> list[str]:
        return [t for t, k in self.kinds.items() if k.expect is not Expect.NONE]

    def lost(self, *, now: float | None = None, grace: float = 0.0) -> list[str]:
        """Accepted, to be answered, not answered (by `now - grace`, if `now` is given)."""
        lost = []
        for token in self.addressed():
            ack = self.inputs[token].first_ack
            if ack is None or self.answers[token]:
                continue
            if now is None or ack <= now - grace:
                lost.append(token)
        return lost

    def waiting(self) -> int:
        """Accepted, to be answered, not answered yet (lost or not)."""
        return len(self.lost())

    def duplicated(self) -> dict[str, int]:
        return {t: n for t in self.addressed() if (n := self.answers[t]) > 1}

    def unwanted(self) -> dict[str, int]:
        """History messages that got an answer anyway."""
        return {t: n for t, k in self.kinds.items() if k is Kind.HISTORY and (n := self.answers[t])}

    def latencies(self, since: float = -math.inf, until: float = math.inf) -> list[float]:
        """Reply latencies of the first answers Feishu created in [since, until)."""
        return [
            a.latency
            for a in self.first_answers
            if a.latency is not None and since <= a.created_at < until
        ]


def percentile(values: Sequence[float], p: float) -> float | None:
    """The nearest-rank percentile `p` (0-100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]

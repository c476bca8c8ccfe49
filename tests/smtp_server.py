"""A real SMTP server for the mail tests: aiosmtpd on a free 127.0.0.1 port (its own thread
and loop), keeping what it accepted; `answer` makes it refuse DATA with that reply instead
(a 5xx for good, a 4xx for now), and `unknown` recipients refused, as a mail server would."""

from __future__ import annotations

import email
import email.policy
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller


@dataclass(frozen=True)
class Received:
    mail_from: str
    rcpt_tos: list[str]
    data: bytes

    @property
    def message(self) -> EmailMessage:
        parsed = email.message_from_bytes(self.data, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        return parsed


@dataclass
class SmtpServer:
    host: str = "127.0.0.1"
    port: int = 0
    received: list[Received] = field(default_factory=list)
    answer: str | None = None  # e.g. "550 5.1.1 no such user": DATA refused so
    tried: int = 0  # DATA commands seen, accepted or not
    unknown: set[str] = field(default_factory=set)  # recipients refused with a 550

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        if address in self.unknown:
            return "550 5.1.1 no such user"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.tried += 1
        if self.answer is not None:
            return self.answer
        data = envelope.original_content or envelope.content
        self.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), bytes(data)))
        return "250 OK"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def smtp_server() -> Iterator[SmtpServer]:
    server = SmtpServer(port=free_port())
    controller = Controller(server, hostname=server.host, port=server.port, ready_timeout=10)
    controller.start()
    try:
        yield server
    finally:
        controller.stop()

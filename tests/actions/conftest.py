"""Fixtures for the action tests: the Feishu world, and a real SMTP server on loopback."""

from collections.abc import Iterator

import pytest

from tests.feishu_world import fake, make_world  # noqa: F401  (fixtures)
from tests.smtp_server import SmtpServer, smtp_server


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    with smtp_server() as server:
        yield server

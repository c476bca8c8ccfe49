"""What a channel is started with: the one door in (ingest), the database and wake-ups its
sender needs, the Host that runs the sender, readiness, and the settings. Nothing that
decides: a channel never sees the Bot, WorkHub or the Matters (the `channels` contract in
`.importlinter`). The runtime's `Services` fits this shape."""

from __future__ import annotations

from typing import Protocol

from bot.channels.ingest import Ingest
from bot.channels.lookup import MessageLookup
from bot.config import Settings
from bot.host.notify import Notifier
from bot.host.workers import Host
from bot.web.health import ReadinessCheck
from storage.db import Database


class ChannelServices(Protocol):
    @property
    def settings(self) -> Settings: ...
    @property
    def db(self) -> Database: ...
    @property
    def notifier(self) -> Notifier: ...
    @property
    def host(self) -> Host: ...
    @property
    def ingest(self) -> Ingest: ...
    @property
    def readiness(self) -> dict[str, ReadinessCheck]: ...
    @property
    def lookups(self) -> dict[str, MessageLookup]: ...
    @property
    def runs_workers(self) -> bool: ...

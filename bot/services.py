"""What a running process holds: the services every module gets from the runtime."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.channels.ingest import Ingest
from bot.channels.lookup import MessageLookup
from bot.config import Role, Settings
from bot.host.notify import Notifier
from bot.host.timers import Timers
from bot.host.workers import Host
from bot.llm.client import ModelClient
from bot.llm.tool_support import ToolSupport
from bot.memory.search import SearchService
from bot.memory.session_index import SessionIndexer
from bot.web.health import ReadinessCheck
from bot.workhub.service import WorkHub
from storage.db import Database


@dataclass
class Services:
    settings: Settings
    role: Role
    db: Database
    notifier: Notifier
    host: Host
    timers: Timers
    ingest: Ingest
    model: ModelClient | None
    search: SearchService
    session_index: SessionIndexer
    workhub: WorkHub
    readiness: dict[str, ReadinessCheck] = field(default_factory=dict)
    # platform -> how to look a message up there (a channel registers its own at start)
    lookups: dict[str, MessageLookup] = field(default_factory=dict)
    # What the Bot's turns last met of the model's tool calls (/status shows it).
    tool_support: ToolSupport = field(default_factory=ToolSupport)

    @property
    def runs_workers(self) -> bool:
        return self.role in (Role.WORKER, Role.ALL)

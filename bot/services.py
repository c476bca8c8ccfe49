"""What a running process holds: the services every module gets from the runtime."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.channels.ingest import Ingest
from bot.channels.lookup import MessageLookup
from bot.config import Role, Settings
from bot.host.notify import Notifier
from bot.host.timers import Timers
from bot.host.workers import Host
from bot.llm.client import ModelClient
from bot.llm.roles import ModelRole
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
    model: ModelClient | None  # the main model: the Bot's and the task agents'
    search: SearchService
    session_index: SessionIndexer
    workhub: WorkHub
    readiness: dict[str, ReadinessCheck] = field(default_factory=dict)
    # platform -> how to look a message up there (a channel registers its own at start)
    lookups: dict[str, MessageLookup] = field(default_factory=dict)
    # What the Bot's turns last met of the model's tool calls (/status shows it).
    tool_support: ToolSupport = field(default_factory=ToolSupport)
    # A role's own model (MAKA_MODEL_<ROLE>_*); a role not here is answered by `model`.
    models: Mapping[ModelRole, ModelClient | None] = field(default_factory=dict)

    def model_for(self, role: ModelRole) -> ModelClient | None:
        return self.models.get(role, self.model) if self.models else self.model

    @property
    def runs_workers(self) -> bool:
        return self.role in (Role.WORKER, Role.ALL)

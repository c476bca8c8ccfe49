"""The Bot as a runtime component: its worker, command registry and tool registry."""

from __future__ import annotations

from aiohttp import web

from bot.actions.commands import register_action_commands
from bot.actions.toolsets import install_bot_action_tools
from bot.assistant.commands import CommandRegistry
from bot.assistant.core_commands import register_core_commands
from bot.assistant.tools import ToolInstaller, bot_tool_registry
from bot.assistant.why import register_why_command
from bot.assistant.worker import BotWorker
from bot.discovery.commands import register_discovery_commands
from bot.forget.commands import register_forget_commands
from bot.matters.commands import register_matter_commands
from bot.memory.commands import register_memory_commands
from bot.memory.indexes.commands import register_index_commands
from bot.memory.tools import install_memory_tools
from bot.owner.commands import register_owner_commands
from bot.services import Services
from bot.sync.commands import register_sync_commands
from bot.workhub.tools import install_workhub_tools


class Assistant:
    def __init__(self, tool_installers: list[ToolInstaller] | None = None) -> None:
        self.commands = CommandRegistry()
        register_core_commands(self.commands)
        register_memory_commands(self.commands)
        register_index_commands(self.commands)
        register_matter_commands(self.commands)
        register_sync_commands(self.commands)
        register_discovery_commands(self.commands)
        register_why_command(self.commands)
        register_owner_commands(self.commands)
        register_action_commands(self.commands)
        register_forget_commands(self.commands)
        self.tools = bot_tool_registry(
            [
                install_workhub_tools,
                install_memory_tools,
                install_bot_action_tools,
                *(tool_installers or []),
            ]
        )

    def add_routes(self, app: web.Application) -> None:
        pass

    async def start(self, services: Services) -> None:
        if services.runs_workers:
            services.host.add(BotWorker(services, self.commands, self.tools))

    async def stop(self) -> None:
        pass

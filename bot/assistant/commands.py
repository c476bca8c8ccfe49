"""Slash commands: parsed before any model is involved, checked against the sender's role,
answered directly. Later modules add their commands to the same registry.

    @registry.command("admins", usage="/admins list|add @user|remove @user", admin=True)
    async def admins_cmd(ctx: CommandContext, args: list[str]) -> str: ...
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bot.assistant.access import NOT_PERMITTED, Role, log_refusal
from bot.assistant.visibility import Visibility
from bot.channels.cards import Card
from bot.services import Services

log = logging.getLogger(__name__)


class UsageError(Exception):
    """Wrong arguments: the reply is the command's usage line (plus this detail, if any)."""


@dataclass
class CommandContext:
    services: Services
    sender_id: str
    role: Role
    platform: str
    chat_id: str
    chat_type: str
    conversation_id: int
    visibility: Visibility  # what this chat may see (bot/assistant/visibility.py)
    mentions: list[dict[str, Any]] = field(default_factory=list)

    def mentioned_open_id(self, token: str) -> str | None:
        """`@Name` in the arguments → that person's open_id (from the message's mentions);
        a raw open_id is accepted as is."""
        if token.startswith("ou_"):
            return token
        name = token.removeprefix("@")
        for mention in self.mentions:
            if mention.get("name") == name and mention.get("open_id"):
                return str(mention["open_id"])
        return None


Handler = Callable[[CommandContext, list[str]], Awaitable[str | Card]]
# What a command's button redraws after a click: its arguments -> (the command whose answer
# is the card to show, what the click did), e.g. `/matters pause 12` -> ("/matters show 12",
# "Paused"); None when that command has no card.
Redraw = Callable[[list[str]], tuple[str, str] | None]


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    summary: str
    admin: bool
    handler: Handler
    redraw: Redraw | None = None


class CommandRegistry:
    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}

    def command(
        self,
        name: str,
        *,
        usage: str,
        summary: str,
        admin: bool = False,
        redraw: Redraw | None = None,
    ) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            if name in self._commands:
                raise ValueError(f"command /{name} registered twice")
            self._commands[name] = Command(name, usage, summary, admin, handler, redraw)
            return handler

        return register

    def visible_to(self, role: Role) -> list[Command]:
        return [c for c in self._commands.values() if role.is_admin or not c.admin]

    @staticmethod
    def is_command(text: str) -> bool:
        return text.lstrip().startswith("/")

    def redraw_for(self, text: str) -> tuple[str, str] | None:
        """The command whose answer is the card to redraw after `text` ran from a button."""
        name, args = _words(text)
        command = self._commands.get(name)
        return command.redraw(args) if command is not None and command.redraw else None

    async def dispatch(self, ctx: CommandContext, text: str) -> str | Card:
        name, args = _words(text)
        command = self._commands.get(name)
        if command is None:
            return f"Unknown command /{name}. Send /help to see the commands."
        if command.admin and not ctx.role.is_admin:
            log_refusal(ctx.sender_id, text, f"{ctx.platform}:{ctx.chat_id}")
            return f"{NOT_PERMITTED}: /{name} is for admins"
        try:
            return await command.handler(ctx, args)
        except UsageError as exc:
            detail = f" ({exc})" if str(exc) else ""
            return f"Usage: {command.usage}{detail}"


def _words(text: str) -> tuple[str, list[str]]:
    try:
        words = shlex.split(text.strip())
    except ValueError:
        words = text.strip().split()
    if not words:
        return "", []
    return words[0].removeprefix("/").lower(), words[1:]

"""Who the console page speaks as (by default, the owner)."""

from __future__ import annotations

from bot.config import Settings

CONSOLE_PLATFORM = "console"
CONSOLE_OWNER = "ou_console_owner"


def console_identity(settings: Settings) -> str:
    return settings.owner or CONSOLE_OWNER

"""Who the console page speaks as: the owner by default, or one of a few named test
identities the page offers for trying how others see the assistant. Never an arbitrary id
from the request."""

from __future__ import annotations

from bot.config import Settings

CONSOLE_PLATFORM = "console"
CONSOLE_OWNER = "ou_console_owner"
CONSOLE_ADMIN = "ou_console_admin"  # an admin on the console platform only
IDENTITIES = ("owner", "admin", "member")
_TEST_IDS = {"admin": CONSOLE_ADMIN, "member": "ou_console_member"}


def console_identity(settings: Settings) -> str:
    return settings.owner or CONSOLE_OWNER


def identity_for(settings: Settings, name: str) -> str:
    """The open_id behind one of IDENTITIES."""
    return console_identity(settings) if name == "owner" else _TEST_IDS[name]


def dm_chat_id(name: str) -> str:
    """Each identity has its own DM with the bot, as on Feishu."""
    return "console-dm" if name == "owner" else f"console-dm-{name}"

"""Who may do what: the owner, admins (MAKA_ADMINS plus those added by command), anyone else.

This is a personal assistant holding its owner's mail and chats, so a stranger's direct
message gets a one-line refusal unless DMs are opened to the tenant (MAKA_OPEN_DMS).
"""

from __future__ import annotations

import logging
from enum import StrEnum

from sqlalchemy.ext.asyncio import AsyncSession

from bot.channels.console.identity import CONSOLE_ADMIN, CONSOLE_PLATFORM, console_identity
from bot.config import Settings
from storage.repos import admins

log = logging.getLogger(__name__)

NOT_PERMITTED_DM = "not permitted: this is a personal assistant"
NOT_PERMITTED = "not permitted"


class Role(StrEnum):
    OWNER = "owner"
    ADMIN = "admin"
    USER = "user"

    @property
    def is_admin(self) -> bool:
        return self in (Role.OWNER, Role.ADMIN)


def _role_by_settings(settings: Settings, platform: str, open_id: str) -> Role | None:
    """The role the settings alone decide; None: an admin only if the admins table lists them."""
    if open_id == settings.owner:
        return Role.OWNER
    if platform == CONSOLE_PLATFORM and open_id == console_identity(settings):
        return Role.OWNER
    if platform == CONSOLE_PLATFORM and open_id == CONSOLE_ADMIN:
        return Role.ADMIN  # the console's test admin, for trying admin commands in a group
    if open_id in settings.admins:
        return Role.ADMIN
    return None


async def role_of(tx: AsyncSession, settings: Settings, platform: str, open_id: str) -> Role:
    role = _role_by_settings(settings, platform, open_id)
    if role is not None:
        return role
    return Role.ADMIN if await admins.exists(tx, open_id) else Role.USER


def role_with(settings: Settings, platform: str, open_id: str, *, listed_admin: bool) -> Role:
    """`role_of`, the admins table's answer already read (`listed_admin`: with the inbox item
    the sender wrote, by the same query)."""
    role = _role_by_settings(settings, platform, open_id)
    if role is not None:
        return role
    return Role.ADMIN if listed_admin else Role.USER


def may_use_assistant(settings: Settings, role: Role, chat_type: str) -> bool:
    if chat_type != "p2p":
        return True  # in groups the assistant answers everyone, scoped to that group
    return role.is_admin or settings.open_dms


def log_refusal(who: str, what: str, where: str) -> None:
    log.warning("refused: who=%s what=%r where=%s", who, what[:200], where)

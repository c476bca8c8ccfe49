"""The configured source adapters, for the sync worker and for `maka sync`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from bot.channels.messages import AttachmentRef, Mention
from bot.config import Settings
from bot.owner.tokens import OwnerTokens, SignInNeeded
from sources.base import SourceAdapter, SourceError
from sources.feishu.docs import KIND as DOCS
from sources.feishu.owner_units import CALENDAR_KIND as CALENDAR
from sources.feishu.owner_units import CHATS_KIND as CHATS
from sources.feishu.records import KIND as FEISHU
from sources.feishu.records import MentionRef
from sources.feishu.tasks import KIND as TASKS
from storage.db import Database

if TYPE_CHECKING:
    from sources.email import ImapSettings

EMAIL = "email"
OWNER_KINDS = (
    DOCS,
    TASKS,
    CHATS,
)  # read as the owner (their sign-in, /signin), besides the calendar
KINDS = (FEISHU, EMAIL, CALENDAR, *OWNER_KINDS)
_AS_OWNER = "set MAKA_FEISHU_APP_ID, MAKA_FEISHU_APP_SECRET and MAKA_SECRET_KEY, then /signin"
HOW_TO_CONFIGURE = {
    FEISHU: "set MAKA_FEISHU_APP_ID and MAKA_FEISHU_APP_SECRET",
    EMAIL: "set MAKA_EMAIL_HOST, MAKA_EMAIL_USER and MAKA_EMAIL_PASSWORD",
    CALENDAR: _AS_OWNER,
    DOCS: _AS_OWNER,
    TASKS: _AS_OWNER,
    CHATS: _AS_OWNER,
}


def render_feishu(message_type: str, content: Any, mentions: Sequence[MentionRef]) -> str:
    """A history message's text exactly as ingest renders an event's (same placeholders, rich
    text, mentions as @Name), so a message reads the same whichever way it arrived."""
    from bot.channels.feishu.normalize import content_text, resolve_mentions

    text = content_text(message_type, content)
    if not mentions:
        return text
    refs = tuple(Mention(m.key, m.name, m.open_id) for m in mentions)
    return resolve_mentions(text, refs, drop_open_id=None)


def feishu_resources(message_type: str, content: Any) -> Sequence[AttachmentRef]:
    """A history message's resources exactly as ingest reads an event's."""
    from bot.channels.feishu.resources import attachment_refs

    return attachment_refs(message_type, content, [])


def configured_kinds(settings: Settings) -> list[str]:
    kinds = []
    if settings.feishu_configured:
        kinds.append(FEISHU)
    if settings.email_configured:
        kinds.append(EMAIL)
    if owner_sign_in_configured(settings):
        kinds.append(CALENDAR)
        kinds += OWNER_KINDS
    return kinds


def owner_sign_in_configured(settings: Settings) -> bool:
    """Sources read as the owner need the Feishu app and MAKA_SECRET_KEY (tokens are sealed
    with it); whether the owner is signed in is the source's error to show, not config."""
    return settings.feishu_configured and settings.secret_key is not None


def as_owner(tokens: OwnerTokens) -> Callable[[], Awaitable[str]]:
    """The owner's token provider for a source: "sign in again: ..." is the source's error
    as is (a SourceError's line, not an exception's name)."""

    async def token() -> str:
        try:
            return await tokens.get()
        except SignInNeeded as exc:
            raise SourceError(str(exc)) from None

    return token


def build_adapters(
    settings: Settings,
    db: Database,
    kinds: Sequence[str] | None = None,
    *,
    instance_id: str = "cli",
) -> dict[str, SourceAdapter]:
    """An adapter for each configured source (of `kinds`, when given). Sources read as the
    owner get `owner_token` (their token provider: SignInNeeded when the owner is not signed
    in, which the source shows as its error)."""
    wanted = set(kinds or KINDS)
    adapters: dict[str, SourceAdapter] = {}
    owner_token = as_owner(OwnerTokens(settings, db, instance_id))
    if FEISHU in wanted and settings.feishu_configured:
        from bot.channels.feishu.api import counted_api
        from sources.feishu.history import FeishuHistory

        api, usage = counted_api(settings, db)
        adapters[FEISHU] = FeishuHistory(
            api, db, render=render_feishu, resources=feishu_resources, on_close=usage.aclose
        )
    if CALENDAR in wanted and owner_sign_in_configured(settings):
        from bot.owner.api import owner_api
        from sources.feishu.calendar import OwnerCalendarSource

        adapters[CALENDAR] = OwnerCalendarSource(
            owner_api(settings, db, owner_token), tz=settings.tz
        )
    if owner_sign_in_configured(settings) and wanted & set(OWNER_KINDS):
        from bot.owner.api import owner_api
        from sources.feishu.docs import OwnerDocs
        from sources.feishu.owner_chats import OwnerChats
        from sources.feishu.tasks import OwnerTasks

        if DOCS in wanted:
            adapters[DOCS] = OwnerDocs(owner_api(settings, db, owner_token))
        if TASKS in wanted:
            adapters[TASKS] = OwnerTasks(owner_api(settings, db, owner_token))
        if CHATS in wanted:
            chats_api = owner_api(settings, db, owner_token)
            adapters[CHATS] = OwnerChats(chats_api, db, render=render_feishu)
    if EMAIL in wanted and settings.email_configured:
        from sources.email import EmailSource

        imap = imap_settings(settings)
        assert imap is not None
        adapters[EMAIL] = EmailSource(
            imap,
            max_attachment_bytes=settings.attachment_max_bytes,
        )
    return adapters


def imap_settings(settings: Settings) -> ImapSettings | None:
    """The configured mailbox's IMAP login (the email source's, and the Sent folder of mail
    sent as an action); None without MAKA_EMAIL_HOST."""
    if not settings.email_configured:
        return None
    from sources.email import ImapSettings

    assert settings.email_host and settings.email_user and settings.email_password
    return ImapSettings(
        host=settings.email_host,
        port=settings.resolved_email_port,
        security=settings.email_security.value,
        user=settings.email_user,
        password=settings.email_password.get_secret_value(),
        mailboxes=tuple(settings.email_mailboxes),
    )


def not_configured(settings: Settings) -> dict[str, str]:
    configured = set(configured_kinds(settings))
    return {k: v for k, v in HOW_TO_CONFIGURE.items() if k not in configured}

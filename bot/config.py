"""Settings: every knob is a `MAKA_*` environment variable (operators and the Helm chart use
these names). A wrong value stops start-up with one line naming the variable.

Secret settings are `SecretStr` (printed as `**********`); `reveal()` hands the raw value to the
one call that needs it. The database URL may hold a password: it is shown masked, if at all."""

from __future__ import annotations

import ipaddress
import re
from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, get_args
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import NoDecode, SettingsConfigDict
from sqlalchemy.engine import make_url

from bot.addresses import IPNetwork, ip_network, public_origin
from bot.llm.settings import ModelSettings
from storage.urls import DatabaseUrlError, masked_database_url, normalize_database_url


class ConfigError(Exception):
    """A setting is wrong. `lines` has one line per problem, each naming its variable."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__(lines[0] if lines else "invalid settings")
        self.lines = lines


class LogLevel(StrEnum):
    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"
    CRITICAL = "CRITICAL"


class SearchBackend(StrEnum):
    EMBEDDED = "embedded"
    MEILISEARCH = "meilisearch"


class FeishuMode(StrEnum):
    WEBHOOK = "webhook"
    WS = "ws"


class EmailSecurity(StrEnum):
    SSL = "ssl"  # IMAP over TLS (port 993)
    STARTTLS = "starttls"  # plain IMAP upgraded with STARTTLS (port 143)
    NONE = "none"  # no encryption (a loopback or test server only)


class SmtpSecurity(StrEnum):
    TLS = "tls"  # SMTP over TLS (port 465)
    STARTTLS = "starttls"  # plain SMTP upgraded with STARTTLS (port 587)
    NONE = "none"  # no encryption (a loopback or test server only)


class RecallMode(StrEnum):
    """Who proposes where a request goes before the Bot's model decides (WorkHub Recall)."""

    REFERENCE = "reference"  # the deterministic reference router (bot/workhub/router.py)
    MODEL = "model"  # a separate model call; the reference router when it fails
    OFF = "off"  # no proposal: the Bot's model routes alone


class EvidenceStrategy(StrEnum):
    """How WorkHub gathers search evidence for candidates."""

    BEST_MESSAGE = "best_message"  # the best-scoring message of each Session
    SESSION_DOCUMENT = "session_document"  # one bounded digest document per Session


class Role(StrEnum):
    WEB = "web"
    WORKER = "worker"
    ALL = "all"


# The largest heartbeat interval (seconds) and daily token budget, for MAKA_DISCOVERY_* and
# `/discovery every|budget` alike: they are stored in 32-bit Integer columns on PostgreSQL.
DISCOVERY_MAX_INTERVAL = 7 * 86_400  # as seldom as the deep pass's default
DISCOVERY_MAX_BUDGET = 1_000_000_000
# Feishu redelivers an unacknowledged event for hours: a duplicate is known for a week at least.
DEDUPE_DAYS = 7

# [0-9], not \d: \d matches any script's digits, and int() reads them
_QUIET = re.compile(r"^\s*([0-9]{1,2})\s*-\s*([0-9]{1,2})\s*$")


def parse_quiet_hours(text: str) -> tuple[int, int] | None:
    """ "22-8" → (22, 8): from 22:00 to 08:00 in the owner's time zone. "" or "off" → None.
    Here, below every module, because both MAKA_DISCOVERY_QUIET and `/discovery quiet` read it."""
    if not text.strip() or text.strip().lower() == "off":
        return None
    m = _QUIET.match(text)
    if m is None:
        raise ValueError(f"{text!r}: write quiet hours as HH-HH, e.g. 22-8 (or off)")
    start, end = int(m.group(1)), int(m.group(2))
    if not (0 <= start <= 23 and 0 <= end <= 23) or start == end:
        raise ValueError(f"{text!r}: two different hours from 0 to 23, e.g. 22-8")
    return start, end


def _split_csv(value: Any) -> Any:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class Settings(ModelSettings):
    model_config = SettingsConfigDict(env_prefix="MAKA_", extra="ignore", frozen=True)

    data_dir: Path = Path("./.maka")
    database_url: str | None = Field(default=None, repr=False)  # may hold a password

    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8080, ge=0, le=65535)

    search_backend: SearchBackend = SearchBackend.EMBEDDED
    index_tool_output: bool = False  # also index raw tool output of Sessions
    workhub_evidence: EvidenceStrategy = EvidenceStrategy.BEST_MESSAGE
    workhub_recall: RecallMode = RecallMode.REFERENCE
    meili_url: str | None = None
    meili_key: SecretStr | None = None

    # The model settings (MAKA_MODEL_*) are inherited from ModelSettings (bot/llm/settings.py).

    feishu_app_id: str | None = None
    feishu_app_secret: SecretStr | None = None
    feishu_encrypt_key: SecretStr | None = None
    feishu_verification_token: SecretStr | None = None
    feishu_mode: FeishuMode = FeishuMode.WEBHOOK
    feishu_domain: str = "https://open.feishu.cn"
    feishu_max_event_age: int = Field(default=1800, gt=0, description="seconds")
    # A reaction on each message the Bot's model is to answer, until the turn ends (issue #39).
    feishu_receipt: bool = True
    # Voice messages transcribed by Feishu's speech recognition (bot/channels/feishu/voice.py,
    # needs ffmpeg and the speech_to_text:speech permission); off: "a voice message (N s)".
    feishu_speech_to_text: bool = False
    feishu_speech_max_seconds: float = Field(default=600.0, gt=0, le=3600, description="seconds")

    # Email, read over IMAP (sources/email.py; the source never sends).
    email_host: str | None = None
    email_port: int | None = Field(default=None, ge=1, le=65535)  # default: 993 ssl, else 143
    email_security: EmailSecurity = EmailSecurity.SSL
    email_user: str | None = None
    email_password: SecretStr | None = None
    email_mailboxes: Annotated[list[str], NoDecode] = Field(default_factory=lambda: ["INBOX"])
    # Mail sent for the owner, only as an approved action (bot/actions/mail.py).
    smtp_host: str | None = None
    smtp_port: int | None = Field(default=None, ge=1, le=65535)  # default: 465 tls, 587, 25 none
    smtp_tls: SmtpSecurity = SmtpSecurity.STARTTLS
    smtp_username: str | None = None  # unset: no AUTH
    smtp_password: SecretStr | None = None
    smtp_from: str | None = None  # default: MAKA_EMAIL_USER

    # Seconds between scheduled syncs of Feishu history and of email; 0 = only on request.
    sync_feishu_interval: float = Field(default=21600.0, ge=0)
    # The owner's calendar (read as the owner): moved and cancelled events show up this soon.
    sync_calendar_interval: float = Field(default=900.0, ge=0)
    sync_email_interval: float = Field(default=900.0, ge=0)
    # The owner's documents and tasks (read as the owner, after /signin); 0 turns it off.
    sync_owner_interval: float = Field(default=3600.0, ge=0)

    # The console page at /console speaks as the owner: on by default only when no Feishu app
    # is configured (development); set MAKA_CONSOLE=true to force it on.
    console: bool | None = None
    # The login of the admin pages, /console and /status (needed off loopback).
    admin_token: SecretStr | None = None
    console_token: SecretStr | None = None  # MAKA_ADMIN_TOKEN's earlier name, still read
    # Behind a TLS-terminating reverse proxy: the address people open (its https makes the
    # login cookie Secure), and the proxies whose X-Forwarded-For/-Proto/-Host are believed.
    public_url: str | None = None
    # Seals the owner's Feishu tokens at rest (bot/owner/crypto.py); without it /signin is
    # refused. Changing it makes the stored sign-in unreadable: the owner signs in again.
    secret_key: SecretStr | None = None
    # What the owner's sign-in asks Feishu for (space-separated; offline_access gives the
    # refresh token that keeps the sign-in alive beyond two hours).
    feishu_oauth_scopes: str = (
        # docx:document: read documents and create them (create_document); drive: list them;
        # im: the owner's chosen chats (sources/feishu/owner_chats.py).
        "offline_access calendar:calendar task:task:write docx:document drive:drive:readonly "
        "wiki:wiki:readonly im:chat:readonly im:message:readonly"
    )
    trusted_proxies: Annotated[list[IPNetwork], NoDecode] = Field(default_factory=list)

    owner: str | None = None
    open_dms: bool = False  # let anyone in the tenant use the assistant in a DM
    admins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    timezone: str = "UTC"
    log_level: LogLevel = LogLevel.INFO

    context_tokens: int = Field(default=8000, ge=1000, description="model input budget")
    bot_debounce: float = Field(default=0.4, ge=0, description="seconds to gather a burst")
    # Turns in flight at once in one process. A turn mostly waits for the model (seconds, no
    # CPU here), so this is sized for waiting, not for cores: at 96, 100 people writing at
    # once to a 3 s model are answered in 6.5 s (12.4 s at 32), and with an instant model
    # the replies keep pace with the acks (benchmarks/conversations.py). The Feishu sender
    # delivers as many at once.
    bot_concurrency: int = Field(default=96, ge=1, le=256)
    # Failed turns over one inbox item before it is parked (bot/assistant/failures.py).
    bot_max_attempts: int = Field(default=4, ge=1, le=20)

    matters_concurrency: int = Field(default=8, ge=1, le=64)
    matter_turn_timeout: float = Field(default=600.0, gt=0, description="seconds")
    # A done or cancelled task quiet this long is archived: no longer a routing candidate.
    # Bounded: `inf` or a span past timedelta's range failed the archiving step every hour.
    task_archive_after: float = Field(
        default=30 * 86_400.0, gt=0, le=3650 * 86_400, description="seconds"
    )

    # Memory indexes (bot/memory/indexes/): how often each is checked for new records by
    # default, and how long one indexing turn may take.
    index_interval: float = Field(default=3600.0, ge=60, le=30 * 86_400, description="seconds")
    index_turn_timeout: float = Field(default=300.0, gt=0, description="seconds")

    # A progress card (steps, then done) on turns and Matters that take time (bot/progress.py).
    progress_cards: bool = True
    # Outward actions (bot/actions/): how long an approval card may wait for the owner, and
    # how many actions of one kind may be proposed a day (counted from local midnight).
    action_approval_hours: float = Field(default=24.0, gt=0, le=30 * 24, description="hours")
    action_daily_cap: int = Field(default=50, ge=0, le=10_000)
    # Free Feishu tenants have a monthly API quota; the status page shows use against it.
    feishu_api_quota: int = Field(default=10_000, ge=0, description="API calls a month")

    # Attachments (bot/attachments/): files larger than this are not downloaded or read
    # (Feishu serves resources up to 100 MB); how long a turn waits for a message's files to
    # be read before it answers with what it has.
    attachment_max_bytes: int = Field(
        default=30 * 1024 * 1024, ge=1024, le=100 * 1024 * 1024, description="bytes"
    )
    attachment_wait_seconds: float = Field(default=20.0, ge=0, le=600, description="seconds")

    # Proactive discovery (bot/discovery/): the defaults the owner's /discovery overrides.
    # Off until the owner turns it on.
    discovery_enabled: bool = False
    discovery_interval: float = Field(
        default=1800.0, ge=60, le=DISCOVERY_MAX_INTERVAL, description="seconds"
    )
    discovery_quiet: str = Field(default="", description="HH-HH in MAKA_TIMEZONE, or empty")
    discovery_budget: int = Field(
        default=50_000, ge=0, le=DISCOVERY_MAX_BUDGET, description="tokens per day"
    )
    discovery_deep_every: float = Field(
        default=7 * 86_400.0, ge=0, le=365 * 86_400, description="seconds; 0 never"
    )
    discovery_turn_timeout: float = Field(default=300.0, gt=0, description="seconds")

    shutdown_grace: float = Field(default=20.0, ge=0)
    poll_interval: float = Field(default=1.0, gt=0)

    # Retention (bot/host/retention.py): days each operational table keeps; 0 keeps forever.
    # The inbox days cover inbound events too: they are what makes a redelivered event a
    # duplicate, so they are never fewer than DEDUPE_DAYS.
    retention_inbox_days: int = Field(default=30, ge=0, description="days; 0 forever")
    retention_outbox_days: int = Field(default=30, ge=0, description="days; 0 forever")
    retention_model_calls_days: int = Field(default=90, ge=0, description="days; 0 forever")
    retention_operations_days: int = Field(default=30, ge=0, description="days; 0 forever")
    retention_interval: float = Field(default=3600.0, ge=60, description="seconds")

    @field_validator("admins", mode="before")
    @classmethod
    def _admins_csv(cls, value: Any) -> Any:
        return _split_csv(value)

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxies_csv(cls, value: Any) -> Any:
        return [ip_network(part) for part in _split_csv(value)]

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        return public_origin(value)

    @field_validator("email_mailboxes", mode="before")
    @classmethod
    def _mailboxes_csv(cls, value: Any) -> Any:
        return _split_csv(value) or ["INBOX"]

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        try:
            return normalize_database_url(value)
        except DatabaseUrlError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("meili_url", "feishu_domain")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"expected an http:// or https:// URL, got {value!r}")
        return value.rstrip("/")

    @field_validator("discovery_quiet")
    @classmethod
    def _quiet_hours(cls, value: str) -> str:
        parse_quiet_hours(value)
        return value.strip()

    @field_validator("log_level", mode="before")
    @classmethod
    def _log_level_any_case(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().upper() in LogLevel.__members__:
            return value.strip().upper()
        return value  # refused as given, so the message shows what was written

    @field_validator("retention_inbox_days")
    @classmethod
    def _keeps_duplicate_keys(cls, value: int) -> int:
        if 0 < value < DEDUPE_DAYS:
            raise ValueError(
                f"must be 0 (keep forever) or at least {DEDUPE_DAYS}: inbound events are "
                "how a redelivered Feishu event is known as a duplicate"
            )
        return value

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r} (try e.g. Asia/Shanghai)") from None
        return value

    # Derived values: one place decides defaults that depend on other settings.
    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return normalize_database_url(f"sqlite:///{(self.data_dir / 'maka.db').resolve()}")

    @property
    def model_configured(self) -> bool:
        return bool(self.model_base_url and self.model_name)

    @property
    def feishu_configured(self) -> bool:
        return bool(self.feishu_app_id and self.feishu_app_secret)

    @property
    def email_configured(self) -> bool:
        return bool(self.email_host)

    @property
    def resolved_email_port(self) -> int:
        if self.email_port is not None:
            return self.email_port
        return 993 if self.email_security is EmailSecurity.SSL else 143

    @property
    def smtp_configured(self) -> bool:
        return bool(self.smtp_host)

    @property
    def resolved_smtp_port(self) -> int:
        if self.smtp_port is not None:
            return self.smtp_port
        return {SmtpSecurity.TLS: 465, SmtpSecurity.STARTTLS: 587}.get(self.smtp_tls, 25)

    @property
    def resolved_smtp_from(self) -> str | None:
        return (self.smtp_from or self.email_user or "").strip() or None

    @property
    def console_enabled(self) -> bool:
        return self.console if self.console is not None else not self.feishu_configured

    @property
    def max_event_age(self) -> timedelta:
        return timedelta(seconds=self.feishu_max_event_age)

    @property
    def task_archive_age(self) -> timedelta:
        return timedelta(seconds=self.task_archive_after)

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def secret_values(self) -> list[str]:
        """Every secret value set (and the database password): text from elsewhere (an
        error a server sent) is scrubbed of them before it is shown."""
        values = [
            reveal(getattr(self, name)) for name in type(self).model_fields if _is_secret(name)
        ]
        if self.database_url:
            values.append(make_url(self.database_url).password)
        return [v for v in values if v]

    def check_consistency(self) -> list[str]:
        """Problems that involve more than one variable."""
        problems: list[str] = []
        if self.search_backend is SearchBackend.MEILISEARCH and not self.meili_url:
            problems.append("MAKA_MEILI_URL: required when MAKA_SEARCH_BACKEND=meilisearch")
        if bool(self.feishu_app_id) != bool(self.feishu_app_secret):
            problems.append(
                "MAKA_FEISHU_APP_SECRET: MAKA_FEISHU_APP_ID and MAKA_FEISHU_APP_SECRET go together"
            )
        if self.email_host and not (self.email_user and self.email_password):
            problems.append(
                "MAKA_EMAIL_USER: MAKA_EMAIL_HOST needs MAKA_EMAIL_USER and MAKA_EMAIL_PASSWORD"
            )
        if self.smtp_host and "@" not in (self.resolved_smtp_from or ""):
            problems.append(
                "MAKA_SMTP_FROM: MAKA_SMTP_HOST needs the sender's address in MAKA_SMTP_FROM"
                " (or an address as MAKA_EMAIL_USER)"
            )
        if self.smtp_username and not self.smtp_password:
            problems.append("MAKA_SMTP_PASSWORD: MAKA_SMTP_USERNAME needs MAKA_SMTP_PASSWORD")
        if (
            self.feishu_app_id
            and self.feishu_mode is FeishuMode.WEBHOOK
            and not (self.feishu_encrypt_key or self.feishu_verification_token)
        ):  # else anyone who can reach /feishu/events could speak as the owner
            problems.append(
                "MAKA_FEISHU_VERIFICATION_TOKEN: webhook mode needs MAKA_FEISHU_VERIFICATION_TOKEN"
                " (every Feishu app has one: Developer Console → Events and Callbacks)"
                " or MAKA_FEISHU_ENCRYPT_KEY"
            )
        token = self.admin_token or self.console_token
        if self.console_enabled and not is_loopback(self.http_host) and not token:
            # the console speaks as the owner: off loopback it must ask who is there
            problems.append(
                f"MAKA_ADMIN_TOKEN: the console (/console) on MAKA_HTTP_HOST={self.http_host}"
                " needs MAKA_ADMIN_TOKEN (or set MAKA_CONSOLE=false)"
            )
        problems += self.model_problems()
        return problems


def is_loopback(host: str) -> bool:
    """A listen or Host name that only this machine reaches."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def reveal(secret: SecretStr | None) -> str | None:
    """The raw value of a secret setting, for the call that needs it; None when unset or empty."""
    return (secret.get_secret_value() or None) if secret is not None else None


def load_settings(**overrides: Any) -> Settings:
    """Read settings from the environment; raise ConfigError with one line per problem."""
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        raise ConfigError([_describe(err) for err in exc.errors()]) from None
    problems = settings.check_consistency()
    if problems:
        raise ConfigError(problems)
    return settings


def _describe(err: Any) -> str:
    field = str(err["loc"][0]) if err.get("loc") else "settings"
    message = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    inner = [part for part in err.get("loc", ())[1:] if isinstance(part, str)]
    if inner:  # a JSON setting's inner key (MAKA_MODEL_PRICES: deepseek-chat.input: ...)
        message = f"{'.'.join(inner)}: {message}"
    value = err.get("input")
    if _is_secret(field):
        value = None
    elif field == "database_url" and isinstance(value, str):
        value = masked_database_url(value)  # None (not shown) when it cannot be parsed
    shown = f" (got {value!r})" if isinstance(value, str | int | float) else ""
    if isinstance(value, str) and value and value in message:
        shown = ""
    return f"MAKA_{field.upper()}: {message}{shown}"


def _is_secret(field: str) -> bool:
    info = Settings.model_fields.get(field)
    return info is not None and SecretStr in get_args(info.annotation)

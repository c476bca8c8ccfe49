"""Tables. Each is owned by one module's service; other modules call that service.

Claimable work rows carry `lease_owner` / `lease_expires_at`: a row is free when its lease is
empty or expired, so a crashed worker's claim lapses by itself (see storage/claims.py).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Date,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from storage.types import JSONType, UTCDateTime, utcnow

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# SQLite only autoincrements INTEGER PRIMARY KEY; PostgreSQL gets BIGINT identities.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class Conversation(Base):
    __tablename__ = "conversations"
    __table_args__ = (UniqueConstraint("platform", "chat_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    platform: Mapped[str] = mapped_column(String(16))
    chat_id: Mapped[str] = mapped_column(String(128))
    chat_type: Mapped[str] = mapped_column(String(16))  # p2p | group
    name: Mapped[str | None] = mapped_column(String(256))
    listen_all: Mapped[bool] = mapped_column(Boolean, default=False)
    # In a p2p chat, the person on the other side (how the owner's DM is found).
    peer_open_id: Mapped[str | None] = mapped_column(String(128), index=True)
    coordination_session_id: Mapped[int | None] = mapped_column(BigId)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class InboundEvent(Base):
    __tablename__ = "inbound_events"
    __table_args__ = (UniqueConstraint("platform", "message_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    platform: Mapped[str] = mapped_column(String(16))
    message_id: Mapped[str] = mapped_column(String(128))
    event_type: Mapped[str] = mapped_column(String(64))
    chat_id: Mapped[str | None] = mapped_column(String(128))
    payload: Mapped[dict[str, Any]] = mapped_column(JSONType)
    status: Mapped[str] = mapped_column(String(16))  # accepted | stale | history
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


def _partial(where: str) -> dict[str, Any]:
    """A partial index's condition, said to both dialects (the syntax is shared)."""
    return {"sqlite_where": text(where), "postgresql_where": text(where)}


_WAITING_FOR_A_CONVERSATION = "delivered_at IS NULL AND conversation_id IS NOT NULL"
# A notice (not a user's message) the Bot has handled in a conversation: what the status page
# lists as `/why ID`. The query says it in these very words (storage.repos.inbox), so that
# both databases can prove it implies the partial index's condition.
HANDLED_NOTICE = (
    "kind != 'user_message' AND conversation_id IS NOT NULL AND delivered_at IS NOT NULL"
)


class InboxItem(Base):
    __tablename__ = "inbox_items"
    __table_args__ = (
        Index("ix_inbox_items_conversation_pending", "conversation_id", "delivered_at"),
        Index("ix_inbox_items_session_pending", "session_id", "delivered_at"),
        # Only what waits: "which conversations (sessions) have input?" is asked on every
        # claim, and through the indexes above it walked every item ever delivered.
        Index(
            "ix_inbox_items_waiting",
            "conversation_id",
            "id",
            "created_at",
            "delivered_at",
            "retry_at",
            **_partial(_WAITING_FOR_A_CONVERSATION),
        ),
        # The same items in arrival order: the Bot's claim walks them oldest first and stops
        # at the ready ones it needs.
        Index(
            "ix_inbox_items_waiting_order",
            "id",
            "conversation_id",
            "created_at",
            "retry_at",
            **_partial(_WAITING_FOR_A_CONVERSATION),
        ),
        Index(
            "ix_inbox_items_session_waiting",
            "session_id",
            "delivered_at",
            **_partial("delivered_at IS NULL AND session_id IS NOT NULL"),
        ),
        # The newest notices handled: without it, every user message ever received was read
        # to find the few notices among them.
        Index("ix_inbox_items_handled_notices", "id", **_partial(HANDLED_NOTICE)),
        # The items waiting out a backoff after a failed turn (almost always none): when the
        # first is due, without reading every waiting item.
        Index(
            "ix_inbox_items_retrying",
            "retry_at",
            "conversation_id",
            **_partial("delivered_at IS NULL AND retry_at IS NOT NULL"),
        ),
        # The parked items /status lists, newest first (few, among every item ever).
        Index("ix_inbox_items_parked", "id", **_partial("parked_at IS NOT NULL")),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    conversation_id: Mapped[int | None] = mapped_column(ForeignKey("conversations.id"))
    session_id: Mapped[int | None] = mapped_column(ForeignKey("sessions.id"))
    kind: Mapped[str] = mapped_column(String(32))
    payload: Mapped[dict[str, Any]] = mapped_column(JSONType)
    # Makes appends idempotent (e.g. one inbox item per inbound message).
    dedupe_key: Mapped[str | None] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    batch_id: Mapped[str | None] = mapped_column(String(64))
    # Failed turns over this item (storage.repos.inbox.record_failures): it is tried again,
    # on its own, no sooner than `retry_at`; after a few it is parked (delivered, with
    # `parked_at`), kept with its error for /status, and the conversation goes on.
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    last_error: Mapped[str | None] = mapped_column(Text)
    retry_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    parked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class OutboxMessage(Base):
    __tablename__ = "outbox"
    __table_args__ = (
        # In the claim's order (next_attempt_at, id), so a claim walks the index and stops at
        # the first free row instead of sorting every pending one.
        Index("ix_outbox_state_due", "state", "next_attempt_at", "id"),
        # "Is an earlier row of this chat still pending?", asked of every candidate a sender
        # claims (a chat's replies go out in order): without it each probe scanned every
        # pending row, quadratic in a backlog.
        # (Not a partial index on pending rows: the state is a bind parameter, which a
        # generic PostgreSQL plan cannot match to an index's WHERE.)
        Index("ix_outbox_chat_state", "platform", "chat_id", "state", "id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    idempotency_key: Mapped[str] = mapped_column(String(64), unique=True)
    conversation_id: Mapped[int | None] = mapped_column(ForeignKey("conversations.id"))
    platform: Mapped[str] = mapped_column(String(16))
    chat_id: Mapped[str] = mapped_column(String(128))
    reply_to: Mapped[str | None] = mapped_column(String(128))
    in_thread: Mapped[bool] = mapped_column(Boolean, default=False)
    content_type: Mapped[str] = mapped_column(String(16))  # text | post | interactive | card | …
    content: Mapped[dict[str, Any]] = mapped_column(JSONType)
    state: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    platform_message_ids: Mapped[list[str] | None] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


# A routing candidate among the Sessions (not archived, not a role's or a subagent's) and
# its last activity. storage.repos.workhub's query says them in these very words, so that
# both databases can prove the partial index below serves its ORDER BY ... LIMIT.
TASK_CANDIDATE = "is_archived = false AND role IS NULL AND subagent_parent IS NULL"
SESSION_ACTIVITY = "coalesce(last_message_at, status_updated_at, created_at)"


class Session(Base):
    __tablename__ = "sessions"
    __table_args__ = (
        Index(
            "ix_sessions_candidates_by_activity",
            text(f"{SESSION_ACTIVITY} DESC"),
            "id",
            **_partial(TASK_CANDIDATE),
        ),
        Index(
            "ix_sessions_conversation_candidates_by_activity",
            "conversation_id",
            text(f"{SESSION_ACTIVITY} DESC"),
            "id",
            **_partial(TASK_CANDIDATE),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    name: Mapped[str] = mapped_column(String(256))
    workspace: Mapped[str | None] = mapped_column(String(256))
    role: Mapped[str | None] = mapped_column(String(32))
    # a task Session: its Matter's status as storage.repos.matters.SESSION_STATE says it
    state: Mapped[str] = mapped_column(String(32), default="active")
    is_archived: Mapped[bool] = mapped_column(Boolean, default=False)
    subagent_parent: Mapped[int | None] = mapped_column(ForeignKey("sessions.id"))
    labels: Mapped[list[str]] = mapped_column(JSONType, default=list)
    conversation_id: Mapped[int | None] = mapped_column(ForeignKey("conversations.id"))
    created_by: Mapped[str | None] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    status_updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_message_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class SessionEvent(Base):
    __tablename__ = "session_events"
    __table_args__ = (UniqueConstraint("session_id", "seq"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("sessions.id"))
    seq: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(
        String(16)
    )  # user | assistant | tool_call | tool_result | status
    text: Mapped[str] = mapped_column(Text)
    payload: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ModelCall(Base):
    __tablename__ = "model_calls"
    __table_args__ = (Index("ix_model_calls_created_at", "created_at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    purpose: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(128))
    input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    latency_ms: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The endpoint reported no usage: the tokens are the one tokenizer's estimate.
    usage_estimated: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Answered (or not) by MAKA_MODEL_FALLBACK_* after the primary model failed.
    fallback: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # The conversation a Bot turn's call was made for (costs per conversation); no foreign
    # key: a record of spending outlives what it was spent on.
    conversation_id: Mapped[int | None] = mapped_column(BigId)


class Timer(Base):
    __tablename__ = "timers"
    __table_args__ = (Index("ix_timers_state_due", "state", "due_at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    kind: Mapped[str] = mapped_column(String(64))
    # One pending wake per key: rescheduling the same key moves it instead of adding another.
    key: Mapped[str] = mapped_column(String(200), unique=True)
    due_at: Mapped[datetime] = mapped_column(UTCDateTime)
    payload: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    state: Mapped[str] = mapped_column(String(16), default="pending")  # pending | fired | failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    fired_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class Lease(Base):
    """A named exclusive lease, e.g. one Bot worker per conversation across replicas."""

    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    owner: Mapped[str] = mapped_column(String(128))
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    acquired_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ApiUsage(Base):
    """Calls to a platform API per day (free Feishu tenants have a monthly quota)."""

    __tablename__ = "api_usage"

    platform: Mapped[str] = mapped_column(String(16), primary_key=True)
    api: Mapped[str] = mapped_column(String(64), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    calls: Mapped[int] = mapped_column(Integer, default=0)


class RetentionState(Base):
    """The last prune (bot/host/retention.py): rows removed and table sizes per table, kept
    so that the status page reads one row instead of counting tables on every view."""

    __tablename__ = "retention_state"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime] = mapped_column(UTCDateTime)
    deleted: Mapped[dict[str, int]] = mapped_column(JSONType)
    sizes: Mapped[dict[str, int]] = mapped_column(JSONType)
    error: Mapped[str | None] = mapped_column(Text)


class Admin(Base):
    """Admins added by command (MAKA_ADMINS are admins too, from the environment)."""

    __tablename__ = "admins"

    open_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    added_by: Mapped[str] = mapped_column(String(128))
    added_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SessionSummary(Base):
    """A coarse, derived summary of a Session. Writing it never touches the Session header's
    activity fields (invariant 7 in docs/design.md). The lease columns make the refresh a
    claimable job."""

    __tablename__ = "session_summaries"

    session_id: Mapped[int] = mapped_column(ForeignKey("sessions.id"), primary_key=True)
    text: Mapped[str | None] = mapped_column(Text)
    covered_seq: Mapped[int] = mapped_column(Integer, default=0)
    completion_count: Mapped[int] = mapped_column(Integer, default=0)
    # A refresh is pending while the count at the latest refresh point (1, 2, 4, 8, ...) is
    # ahead of the count the stored text was made for; several points coalesce into one job.
    requested_at_count: Mapped[int] = mapped_column(Integer, default=0)
    summarized_at_count: Mapped[int] = mapped_column(Integer, default=0)
    # A request on another topic was delegated: refresh at the next completion, whatever
    # the 1, 2, 4, 8 … schedule says.
    stale: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    generated_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class SessionCompletion(Base):
    """One row per terminal notification, so a repeated one does not count twice."""

    __tablename__ = "session_completions"

    session_id: Mapped[int] = mapped_column(ForeignKey("sessions.id"), primary_key=True)
    completion_key: Mapped[str] = mapped_column(String(200), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Operation(Base):
    """The durable claim of one idempotent write, by its id: a Matter's settle at a revision
    (kind `settle`, subject the Matter) or a WorkHub routing write (`delegate`, `create`,
    subject the task Session). A retried write converges on the stored outcome; a different
    write under the same id (another fingerprint) is refused."""

    __tablename__ = "operations"
    __table_args__ = (
        Index("ix_operations_kind_subject", "kind", "subject_id", "created_at"),
        Index("ix_operations_created_at", "created_at"),  # the pruner's walk, oldest first
    )

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    subject_id: Mapped[int | None] = mapped_column(BigId)
    fingerprint: Mapped[str] = mapped_column(String(64))
    outcome: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Matter(Base):
    """The durable work of one task Session: what it is for, where it stands, when it wakes.

    `running_since` is set while a turn runs: a Matter found with it set and its lease
    lapsed was interrupted (a crash, a restart) and is paused and reported, not re-run.
    """

    __tablename__ = "matters"
    __table_args__ = (Index("ix_matters_status_wake", "status", "next_wake_at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("sessions.id"), unique=True)
    conversation_id: Mapped[int | None] = mapped_column(ForeignKey("conversations.id"))
    requested_by: Mapped[str | None] = mapped_column(String(128))
    objective: Mapped[str] = mapped_column(Text)
    amendments: Mapped[list[dict[str, Any]]] = mapped_column(JSONType, default=list)
    state_text: Mapped[str] = mapped_column(Text, default="")
    # active | waiting | paused | completed | cancelled
    status: Mapped[str] = mapped_column(String(16), default="active")
    revision: Mapped[int] = mapped_column(Integer, default=0)
    wakes: Mapped[list[str]] = mapped_column(JSONType, default=list)  # ISO 8601, UTC
    next_wake_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    waiting_for: Mapped[str | None] = mapped_column(Text)
    # The owner's event or task it waits for (bot/matters/waits.py), or none.
    waits_on: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    work_record: Mapped[list[dict[str, Any]]] = mapped_column(JSONType, default=list)
    run_count: Mapped[int] = mapped_column(Integer, default=0)
    rejection_count: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    running_since: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class Source(Base):
    """One unit of an external source we keep originals of: a Feishu chat (`feishu:<chat_id>`),
    a mailbox (`email:<mailbox>`), or an adapter's own observation (`feishu`, `email`: the chat
    list, the login). `observed_cursor` is what the source last showed us; `synced_cursor` is
    how far our copy reaches, and it only advances in the transaction that stores the records.
    `wanted_at` asks for a sync; the lease columns let one process at a time run it.
    `stopped_at` (with `stopped_by`, e.g. `forget #3`): the owner forgot it, and nothing syncs
    it until they turn it back on (storage/repos/source_stops.py).
    """

    __tablename__ = "sources"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    kind: Mapped[str] = mapped_column(String(16))  # feishu | email
    scope: Mapped[str | None] = mapped_column(String(200))
    title: Mapped[str | None] = mapped_column(String(256))
    observed_cursor: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    synced_cursor: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    last_success_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    last_error_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    record_count: Mapped[int] = mapped_column(Integer, default=0)
    wanted_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    request: Mapped[dict[str, Any] | None] = mapped_column(JSONType)  # e.g. {"since": ...}
    stopped_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    stopped_by: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class SourceRecord(Base):
    """An original (a chat message, a mail), once per (`source`, `external_id`) whichever way
    it arrived. `id` is the global, monotonically increasing `seq` that index coverage counts
    in. `source` is the source's name, not a foreign key, so ingest writes without a lookup."""

    __tablename__ = "source_records"
    __table_args__ = (
        UniqueConstraint("source", "external_id"),
        Index("ix_source_records_scope_id", "scope", "id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    source: Mapped[str] = mapped_column(String(200))
    external_id: Mapped[str] = mapped_column(String(200))
    scope: Mapped[str] = mapped_column(String(200))
    title: Mapped[str | None] = mapped_column(Text)
    text: Mapped[str] = mapped_column(Text)
    author: Mapped[str | None] = mapped_column(String(512))
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    thread_key: Mapped[str | None] = mapped_column(String(200))
    payload: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SourceRecordCount(Base):
    """How many records a source has (tombstones included), kept by triggers on
    `source_records` in the writing transaction (migration 0029), plus on PostgreSQL the
    changes not folded yet: `/sync status` and the status page read these instead of
    counting every record."""

    __tablename__ = "source_record_counts"

    source: Mapped[str] = mapped_column(String(200), primary_key=True)
    records: Mapped[int] = mapped_column(BigInteger)


class SourceRecordCountChange(Base):
    """A statement's change to a source's count on PostgreSQL, appended by its trigger and
    folded into `SourceRecordCount` by the record-counts worker: appending makes no writer
    wait for another's commit, as one counter row updated by all of them would."""

    __tablename__ = "source_record_count_changes"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    source: Mapped[str] = mapped_column(String(200))
    change: Mapped[int] = mapped_column(BigInteger)


class SourceShare(Base):
    """The owner shared a source with a conversation: its records can be found there. Nothing
    else ever widens what a group or another person's DM may see."""

    __tablename__ = "source_shares"

    source: Mapped[str] = mapped_column(String(200), primary_key=True)  # a sources.name
    conversation_id: Mapped[int] = mapped_column(
        ForeignKey("conversations.id"), primary_key=True, index=True
    )
    shared_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class OwnerChat(Base):
    """A chat of the owner's that the `chats` source reads with the owner's token (chosen
    with `/sync chats add`): a group the bot is not in, or a direct message by its id."""

    __tablename__ = "owner_chats"

    chat_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    title: Mapped[str | None] = mapped_column(String(256))
    chat_type: Mapped[str] = mapped_column(String(16))  # group | p2p
    chosen_by: Mapped[str] = mapped_column(String(128))
    chosen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class MemoryIndex(Base):
    """A named index an indexing agent keeps over the records of some scopes, by the owner's
    criteria. Every record with `seq <= covered_cursor` in those scopes has been organized.
    Work takes a fixed range (covered_cursor, range_end]; `range_done` is how far into it the
    agent said it got when it stopped early. Coverage moves only when a range is complete.
    `scopes` None means every scope (made in the owner's DM). `pending_count` None is unknown
    (a check failed), never 0."""

    __tablename__ = "memory_indexes"
    __table_args__ = (Index("ix_memory_indexes_due", "paused", "next_check_at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    criteria: Mapped[str] = mapped_column(Text)
    scopes: Mapped[list[str] | None] = mapped_column(JSONType)
    conversation_id: Mapped[int | None] = mapped_column(ForeignKey("conversations.id"))
    created_by: Mapped[str | None] = mapped_column(String(128))
    session_id: Mapped[int | None] = mapped_column(ForeignKey("sessions.id"))
    # pending | updating | no_changes_at_last_check | check_failed | maintenance_failed
    status: Mapped[str] = mapped_column(String(32), default="pending")
    paused: Mapped[bool] = mapped_column(Boolean, default=False)
    covered_cursor: Mapped[int] = mapped_column(BigInteger, default=0)
    range_end: Mapped[int | None] = mapped_column(BigInteger)
    range_done: Mapped[int | None] = mapped_column(BigInteger)
    pending_count: Mapped[int | None] = mapped_column(Integer)
    interval_seconds: Mapped[int] = mapped_column(Integer, default=3600)
    next_check_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_checked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_organized_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    last_error_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    ready_notified: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class IndexEntry(Base):
    """One entry of a memory index: a key the agent chose, its text, and the seqs of the
    records it was made from. Written with an expected revision, so two writers cannot
    silently overwrite each other and a replayed write changes nothing."""

    __tablename__ = "index_entries"
    __table_args__ = (
        UniqueConstraint("index_id", "key"),
        Index("ix_index_entries_updated_at", "updated_at"),  # the pre-check's newest change
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    index_id: Mapped[int] = mapped_column(ForeignKey("memory_indexes.id"), index=True)
    key: Mapped[str] = mapped_column(String(200))
    text: Mapped[str] = mapped_column(Text)
    refs: Mapped[list[int]] = mapped_column(JSONType, default=list)
    revision: Mapped[int] = mapped_column(Integer, default=1)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class DiscoveryState(Base):
    """The owner's discovery heartbeat (one row, id 1): the Host owns it, never a model.
    `watermark` is what the pre-check had seen when the last round ran (the newest record,
    index entry, note, feedback, due Matters and near deadlines); `next_round_at` is the next
    heartbeat. Claimed with a lease so one replica beats at a time."""

    __tablename__ = "discovery_state"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    enabled: Mapped[bool] = mapped_column(Boolean, default=False)
    interval_seconds: Mapped[int] = mapped_column(Integer, default=1800)
    quiet_from: Mapped[int | None] = mapped_column(Integer)  # hour, owner's time zone
    quiet_to: Mapped[int | None] = mapped_column(Integer)
    budget_tokens: Mapped[int] = mapped_column(Integer, default=50_000)  # per day
    deep_every_seconds: Mapped[int] = mapped_column(Integer, default=7 * 86_400)
    run_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    next_round_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_round_at: Mapped[datetime | None] = mapped_column(UTCDateTime)  # last completed
    watermark: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    discovery_session_id: Mapped[int | None] = mapped_column(ForeignKey("sessions.id"))
    judgement_session_id: Mapped[int | None] = mapped_column(ForeignKey("sessions.id"))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class DiscoveryRound(Base):
    """One heartbeat's outcome: `skipped` (with its reason, no model call), or a round that
    went `discovery` → `judgement` → `done` (or `failed` with the error). A round found in
    `judgement` resumes there: Discovery's notes are already committed."""

    __tablename__ = "discovery_rounds"
    __table_args__ = (Index("ix_discovery_rounds_phase", "phase", "started_at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    # skipped | discovery | judgement | done | failed
    phase: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text, default="")
    watermark: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    findings: Mapped[int] = mapped_column(Integer, default=0)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class NotebookNote(Base):
    """A short, dated note of the owner's discovery notebook; only ever appended."""

    __tablename__ = "notebook_notes"
    # The pre-check's near deadlines: a range of due days, not every note.
    __table_args__ = (Index("ix_notebook_notes_due_on", "due_on"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    round_id: Mapped[int | None] = mapped_column(ForeignKey("discovery_rounds.id"))
    author: Mapped[str] = mapped_column(String(16))  # discovery | judgement
    # interest | situation | resource | unknown | connection | correction
    kind: Mapped[str] = mapped_column(String(16))
    text: Mapped[str] = mapped_column(Text)
    refs: Mapped[list[str]] = mapped_column(JSONType, default=list)
    due_on: Mapped[date | None] = mapped_column(Date)  # a deadline the note is about
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Finding(Base):
    """What Judgement decided the owner should hear, with its evidence refs. `status`:
    `queued` (in the owner's Bot inbox, not sent yet), `delivered` (the Bot's message telling
    it was sent: `delivered_at`, and `message_id` that message's platform id), `unsent` (the
    Bot's turn sent nothing for it, or its message failed), `repeat` (close to an earlier
    finding with nothing new behind it: dropped), `undelivered` (no DM with the owner yet).
    The owner's feedback on it is in `finding_feedback`."""

    __tablename__ = "findings"
    __table_args__ = (UniqueConstraint("round_id", "ordinal"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    round_id: Mapped[int] = mapped_column(ForeignKey("discovery_rounds.id"))
    ordinal: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    refs: Mapped[list[str]] = mapped_column(JSONType, default=list)
    status: Mapped[str] = mapped_column(String(16))
    repeat_of: Mapped[int | None] = mapped_column(BigInteger)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    message_id: Mapped[str | None] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class FindingFeedback(Base):
    """The owner's feedback on a delivered finding, tied to its message: a reply or quote of
    it (`reply`), a reaction on it (`reaction`), later a card's button (`button`). `source`
    names what it came from (the reply's message id, the reaction's event), once per
    finding. Silence records nothing: it is not rejection."""

    __tablename__ = "finding_feedback"
    __table_args__ = (UniqueConstraint("finding_id", "source"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    finding_id: Mapped[int] = mapped_column(ForeignKey("findings.id"))
    kind: Mapped[str] = mapped_column(String(16))
    source: Mapped[str] = mapped_column(String(200))
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class MessageReaction(Base):
    """A reaction someone added to a message (Feishu `im.message.reaction.created_v1`),
    stored once per event: what discovery reads as feedback on a finding's message. It never
    starts a turn."""

    __tablename__ = "message_reactions"
    __table_args__ = (
        UniqueConstraint("platform", "event_id"),
        Index("ix_message_reactions_message", "platform", "message_id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    platform: Mapped[str] = mapped_column(String(16))
    event_id: Mapped[str] = mapped_column(String(128))
    message_id: Mapped[str] = mapped_column(String(128))
    operator_id: Mapped[str | None] = mapped_column(String(128))  # open_id, when a user
    emoji: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)  # Feishu's action time
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ProgressCard(Base):
    """A progress card: one per Bot turn or per Matter (bot/progress.py writes the desired
    state), pushed to the chat by its platform's card worker (bot/channels/progress_sender.py).
    `version` counts changes of the desired state, `pushed_version` the one the platform
    shows; `next_attempt_at` is set while there is something to push (NULL otherwise, so the
    due index holds only cards with work) and keeps pushes about a second apart."""

    __tablename__ = "progress_cards"
    __table_args__ = (
        Index("ix_progress_cards_due", "platform", "next_attempt_at"),
        # The sweep looks for the few cards still working among every card ever made.
        Index("ix_progress_cards_status", "status"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    key: Mapped[str] = mapped_column(String(64), unique=True)  # the turn key, or matter-<id>
    platform: Mapped[str] = mapped_column(String(16))
    chat_id: Mapped[str] = mapped_column(String(128))
    conversation_id: Mapped[int | None] = mapped_column(ForeignKey("conversations.id"))
    reply_to: Mapped[str | None] = mapped_column(String(128))  # the message the card answers
    inbox_item_id: Mapped[int | None] = mapped_column(BigInteger)  # a turn's first item
    matter_id: Mapped[int | None] = mapped_column(BigInteger)
    title: Mapped[str] = mapped_column(String(256))
    steps: Mapped[list[str]] = mapped_column(JSONType, default=list)
    status: Mapped[str] = mapped_column(String(16), default="working")
    version: Mapped[int] = mapped_column(Integer, default=1)
    # What was pushed.
    card_id: Mapped[str | None] = mapped_column(String(128))
    message_id: Mapped[str | None] = mapped_column(String(128))
    element_id: Mapped[str | None] = mapped_column(String(64))
    sequence: Mapped[int] = mapped_column(Integer, default=0)
    pushed_version: Mapped[int] = mapped_column(Integer, default=0)
    streaming_closed: Mapped[bool] = mapped_column(Boolean, default=False)
    streaming_since: Mapped[datetime | None] = mapped_column(UTCDateTime)
    pushed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    pushes: Mapped[int] = mapped_column(Integer, default=0)
    failures: Mapped[int] = mapped_column(Integer, default=0)  # pushes failed in a row
    last_error: Mapped[str | None] = mapped_column(Text)
    gave_up_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class AttachmentBlob(Base):
    """A file's content, once per SHA-256, with what extraction read from it (`text` NULL:
    not read yet; `error`: the one line saying why it could not be read)."""

    __tablename__ = "attachment_blobs"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    kind: Mapped[str | None] = mapped_column(String(16))
    text: Mapped[str | None] = mapped_column(Text)
    detail: Mapped[str | None] = mapped_column(String(256))
    error: Mapped[str | None] = mapped_column(Text)
    extracted_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Attachment(Base):
    """One resource of a message or mail (storage/repos/attachments.py tells the states).
    `source` / `scope` are its message's, so its record is seen exactly where the message is;
    `record_id` is the seq of the source record holding its text, once written."""

    __tablename__ = "attachments"
    __table_args__ = (
        UniqueConstraint("platform", "message_id", "resource_key"),
        Index("ix_attachments_due", "state", "next_attempt_at"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    platform: Mapped[str] = mapped_column(String(16))
    message_id: Mapped[str] = mapped_column(String(200))  # the message's external id
    resource_key: Mapped[str] = mapped_column(String(256))  # image_key, file_key, mail part
    source: Mapped[str] = mapped_column(String(200))
    scope: Mapped[str] = mapped_column(String(200))
    chat_id: Mapped[str | None] = mapped_column(String(128))
    kind: Mapped[str] = mapped_column(String(16))  # image | file | audio | media | mail
    name: Mapped[str] = mapped_column(String(512))
    declared_size: Mapped[int | None] = mapped_column(BigInteger)
    duration_ms: Mapped[int | None] = mapped_column(BigInteger)
    author: Mapped[str | None] = mapped_column(String(512))
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    state: Mapped[str] = mapped_column(String(16))
    sha256: Mapped[str | None] = mapped_column(String(64))
    record_id: Mapped[int | None] = mapped_column(BigInteger)
    error: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class OwnerSignInState(Base):
    """A pending `/signin`: the OAuth `state` (only its SHA-256 is kept), bound to the owner's
    open_id, single use (`used_at`), short-lived (`expires_at`)."""

    __tablename__ = "owner_signin_states"

    state_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    open_id: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class OwnerToken(Base):
    """The owner's Feishu sign-in: one row. `sealed` is the AES-GCM ciphertext of the tokens,
    scopes, open_id and expiries (bot/owner/crypto.py); the expiries are repeated in the clear
    only so the refresh can be scheduled. `version` grows with every write: a refresh stores
    its rotated token only over the version it read. `state` is `ok` or `red` (sign in again,
    nothing more is tried); a transient refresh failure sets `retry_at` (backed off)."""

    __tablename__ = "owner_tokens"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    sealed: Mapped[bytes] = mapped_column(LargeBinary)
    access_expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    refresh_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    version: Mapped[int] = mapped_column(Integer, default=1)
    state: Mapped[str] = mapped_column(String(16))
    last_error: Mapped[str | None] = mapped_column(Text)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    retry_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    signed_in_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Action(Base):
    """One proposed outward action (bot/actions/): proposed → approved | rejected | expired →
    running → done | failed. Approved rows are claimed with a lease by the action worker; the
    platform's idempotency key is derived from `id` (bot/actions/ledger.py), so a run again
    after a crash is the same request to the platform, not a second one."""

    __tablename__ = "actions"
    __table_args__ = (
        Index("ix_actions_due", "state", "next_attempt_at"),
        Index("ix_actions_kind_created", "kind", "created_at"),  # the per-day caps
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    # The request that proposed it (a Bot turn's tool call), when it has a stable id: a turn
    # run again after a crash proposes nothing twice.
    request_key: Mapped[str | None] = mapped_column(String(200), unique=True)
    params: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    summary: Mapped[str] = mapped_column(Text)  # the action in plain words
    requester: Mapped[str] = mapped_column(String(128))
    conversation_id: Mapped[int | None] = mapped_column(ForeignKey("conversations.id"))
    reason: Mapped[str] = mapped_column(Text, default="")
    state: Mapped[str] = mapped_column(String(16))
    decided_by: Mapped[str | None] = mapped_column(String(128))  # who approved or rejected
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    permission_id: Mapped[int | None] = mapped_column(BigInteger)  # the /allow that approved
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)  # an approval after it: none
    result: Mapped[str | None] = mapped_column(Text)  # the executor's one line
    last_error: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class ActionPermission(Base):
    """A standing `/allow KIND`: in one conversation (anyone there may cause that kind), or
    everywhere (`conversation_id` NULL: the owner's own requests, anywhere)."""

    __tablename__ = "action_permissions"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    conversation_id: Mapped[int | None] = mapped_column(ForeignKey("conversations.id"))
    granted_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class ForgetRequest(Base):
    """The owner's `/forget` or `maka forget`: what to remove (`selector`), carried out in
    batches by whoever claims it. `cursor` is the last record seq examined, so a crash or a
    failed batch resumes where the last committed batch ended; `removed` counts what went.
    status: pending | done | parked (attempts exhausted; `error` says why)."""

    __tablename__ = "forget_requests"
    __table_args__ = (Index("ix_forget_requests_due", "status", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    selector: Mapped[dict[str, Any]] = mapped_column(JSONType)
    requested_by: Mapped[str] = mapped_column(String(128))
    status: Mapped[str] = mapped_column(String(16), default="pending")
    cursor: Mapped[int] = mapped_column(BigInteger, default=0)
    removed: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    done_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

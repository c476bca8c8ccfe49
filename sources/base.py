"""The one source adapter interface: observe, sync a bounded range, report progress.

An adapter reads an external source and never writes the database itself. `observe()` says
what is there (the units: chats, mailboxes) and where the source stands (observed cursors).
`sync(unit, request)` yields pages over a bounded range, from the unit's synced cursor to
what was there when the sync began; each page carries its records and the synced cursor
*after* it. The runner (`sources.runner`) commits every page's records together with its
cursor, so a sync killed at any point resumes from the last committed page, and the unique
(source, external_id) key makes any overlap harmless.

Any exception from an adapter is a failure, shown on the source as its last error; an
adapter never turns a failure into an empty page ("no changes").
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from storage.repos.attachments import NewAttachment
from storage.repos.source_records import NewRecord

Cursor = dict[str, Any]


@dataclass(frozen=True)
class Unit:
    """One syncable part of a source, as observed (a chat, a mailbox)."""

    name: str  # the source name, e.g. "feishu:oc_123" or "email:INBOX"
    scope: str  # dm:<open_id> | group:<chat_id> | mail:<mailbox>
    title: str | None = None
    observed_cursor: Cursor | None = None
    # The source showed this unit but cannot be synced (e.g. a configured mailbox that does
    # not exist): recorded as the unit's error.
    error: str | None = None
    # Observed, but not to be synced on a general request (e.g. a group the bot has left).
    syncable: bool = True


@dataclass(frozen=True)
class Observation:
    units: list[Unit]
    cursor: Cursor  # the adapter-level observation (e.g. how many chats, which server)


@dataclass(frozen=True)
class UnitState:
    """A unit as stored: what the adapter needs to continue where the last sync stopped."""

    name: str
    scope: str
    title: str | None
    observed_cursor: Cursor | None
    synced_cursor: Cursor | None


@dataclass(frozen=True)
class SyncRequest:
    since: datetime | None = None  # backfill at least back to this moment


@dataclass(frozen=True)
class Page:
    records: list[NewRecord] = field(default_factory=list)
    # The synced cursor once this page is stored; None leaves the cursor as it is (records
    # that belong to a step not finished yet, e.g. the replies of a thread).
    cursor: Cursor | None = None
    # How many items the whole range holds, when the source says so (progress bars).
    total: int | None = None
    # The files the records carry, with their bytes (a mail's attachments): stored with the
    # records that are new, as attachment rows ready to be read (storage/repos/attachments.py).
    attachments: list[FileOf] = field(default_factory=list)
    # Items that left the source or changed (a cancelled or moved event), removed before
    # the records are stored, in the same transaction (see `Removal`).
    removed: list[Removal] = field(default_factory=list)


@dataclass(frozen=True)
class Removal:
    """An item's records become tombstones, the way a recalled message's do
    (storage/repos/source_records.py `remove_message`): search drops them and memory forgets them.
    `keep`: the item's current version, stored by the same page (an event moved: its new
    version stays, the old ones go)."""

    source: str
    item: str
    scope: str
    keep: str | None = None


@dataclass(frozen=True)
class FileOf:
    """A file of a record on the page: its bytes, stored once by SHA-256 (a mail's part), or
    None when they are still to be fetched (a Feishu resource seen by the history sync)."""

    attachment: NewAttachment
    data: bytes | None = None


class SourceAdapter(Protocol):
    kind: str  # "feishu" | "email": also the name of the adapter's own source row

    async def observe(self) -> Observation: ...

    def sync(self, unit: UnitState, request: SyncRequest) -> AsyncGenerator[Page, None]: ...

    async def aclose(self) -> None: ...


class Progress(Protocol):
    """Told about a sync as it goes (the CLI draws a progress bar from it)."""

    def planned(self, units: int) -> None: ...

    def started(self, source: str, title: str | None) -> None: ...

    def advanced(self, source: str, *, seen: int, new: int, total: int | None) -> None: ...

    def finished(self, source: str, error: str | None) -> None: ...


class NoProgress:
    def planned(self, units: int) -> None:
        pass

    def started(self, source: str, title: str | None) -> None:
        pass

    def advanced(self, source: str, *, seen: int, new: int, total: int | None) -> None:
        pass

    def finished(self, source: str, error: str | None) -> None:
        pass


class SourceError(Exception):
    """A source could not be read; the message is shown to the operator as is."""


def describe_error(exc: BaseException) -> str:
    """One line for `last_error`: what failed, never a secret (adapters keep passwords out of
    their messages)."""
    text = str(exc).strip().replace("\n", " ")
    if isinstance(exc, SourceError):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

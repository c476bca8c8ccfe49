"""In-memory records: an index (settings, documents) and a task, with their JSON views."""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .settings import _DEFAULT_SETTINGS


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class _Index:
    uid: str
    primary_key: str | None
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)
    settings: dict[str, Any] = field(default_factory=lambda: copy.deepcopy(_DEFAULT_SETTINGS))
    documents: dict[str, dict[str, Any]] = field(default_factory=dict)

    def info(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "primaryKey": self.primary_key,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
        }


@dataclass
class _Task:
    uid: int
    index_uid: str | None
    type: str
    details: dict[str, Any]
    apply: Callable[[], None]
    status: str = "enqueued"
    error: dict[str, str] | None = None
    enqueued_at: str = field(default_factory=_now)
    started_at: str | None = None
    finished_at: str | None = None

    def view(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "batchUid": self.uid if self.started_at else None,
            "indexUid": self.index_uid,
            "status": self.status,
            "type": self.type,
            "canceledBy": None,
            "details": self.details,
            "error": self.error,
            "duration": "PT0.001S" if self.finished_at else None,
            "enqueuedAt": self.enqueued_at,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
        }

    def summary(self) -> dict[str, Any]:
        return {
            "taskUid": self.uid,
            "indexUid": self.index_uid,
            "status": "enqueued",
            "type": self.type,
            "enqueuedAt": self.enqueued_at,
        }

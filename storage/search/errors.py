"""Errors raised by search backends; callers catch `SearchError`."""

from __future__ import annotations


class SearchError(Exception):
    """Base class: the search layer could not do what was asked."""


class SearchUnavailableError(SearchError):
    """The backend cannot be reached or is not healthy; retrying later may help."""


class SearchIndexLockedError(SearchError):
    """Another writer (usually another process) holds the embedded index's write lock."""


class SearchSchemaError(SearchError):
    """The on-disk index was built with a different layout; rebuild it."""


class SearchTimeoutError(SearchError):
    """A Meilisearch task did not finish in time. It is still queued on the server and may
    be applied later, so the write's outcome is unknown."""

    def __init__(self, message: str, task_uid: int | None = None) -> None:
        super().__init__(message)
        self.task_uid = task_uid


class SearchTaskFailedError(SearchError):
    """Meilisearch processed a task and reported a failure."""

    def __init__(self, message: str, code: str | None = None, task_uid: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.task_uid = task_uid


class SearchRequestError(SearchError):
    """Meilisearch refused a request (bad key, missing index, invalid filter...)."""

    def __init__(self, message: str, code: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.status = status

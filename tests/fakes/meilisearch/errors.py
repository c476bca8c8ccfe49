"""The Meilisearch error envelope: an exception carrying status, code, type and message."""

from __future__ import annotations


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, type_: str = "invalid_request"):
        super().__init__(message)
        self.status, self.code, self.message, self.type = status, code, message, type_

    def body(self) -> dict[str, str]:
        return {
            "message": self.message,
            "code": self.code,
            "type": self.type,
            "link": f"https://docs.meilisearch.com/errors#{self.code}",
        }

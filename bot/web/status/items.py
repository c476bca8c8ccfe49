"""One line of the status page: what, its state, and when red, what to do."""

from __future__ import annotations

from pydantic import BaseModel


class Item(BaseModel):
    name: str
    state: str
    detail: str = ""
    red: bool = False
    hint: str = ""

"""The names of the sources read as the owner, apart from their adapters: the Bot's tools and
the sync commands name them without loading the Feishu SDK the adapters import."""

from __future__ import annotations

CALENDAR_KIND = "calendar"
CALENDAR_UNIT = f"{CALENDAR_KIND}:primary"
CALENDAR_SCOPE = "owner:calendar"

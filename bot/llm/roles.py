"""Who calls the model, in one place: each call's `purpose` (as recorded in `model_calls`)
belongs to a role, and a role may have its own model (`MAKA_MODEL_<ROLE>_*`).

`ModelRole` decides which client answers a call; `Purpose.label` is how the status page
names who made it (the Bot's routing call is the Bot's work, though a router model may
answer it)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ModelRole(StrEnum):
    MAIN = "main"  # the Bot and task agents: MAKA_MODEL_*
    SUMMARY = "summary"
    INDEXER = "indexer"
    DISCOVERY = "discovery"
    REVIEWER = "reviewer"
    ROUTER = "router"  # the WorkHub model router (MAKA_WORKHUB_RECALL=model)


# The roles that may be given a model of their own, in the order they are described.
OWN_MODEL_ROLES = (
    ModelRole.SUMMARY,
    ModelRole.INDEXER,
    ModelRole.DISCOVERY,
    ModelRole.REVIEWER,
    ModelRole.ROUTER,
)


@dataclass(frozen=True, slots=True)
class Purpose:
    role: ModelRole
    label: str  # who made the call, as the status page says


PURPOSES: dict[str, Purpose] = {
    "bot_turn": Purpose(ModelRole.MAIN, "Bot"),
    "workhub_route": Purpose(ModelRole.ROUTER, "Bot"),
    "matter_turn": Purpose(ModelRole.MAIN, "task agents"),
    "matter_review": Purpose(ModelRole.REVIEWER, "reviewer"),
    "session_summary": Purpose(ModelRole.SUMMARY, "summaries"),
    "index_turn": Purpose(ModelRole.INDEXER, "indexers"),
    "discovery_turn": Purpose(ModelRole.DISCOVERY, "discovery"),
    "judgement_turn": Purpose(ModelRole.DISCOVERY, "discovery"),
}
OTHER = Purpose(ModelRole.MAIN, "other")  # a purpose recorded by an older or newer version
LABEL_ORDER = ("Bot", "task agents", "reviewer", "summaries", "indexers", "discovery", "other")


def purpose_of(name: str) -> Purpose:
    return PURPOSES.get(name, OTHER)

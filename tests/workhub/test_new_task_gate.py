"""The new-task gate (bot/workhub/new_task.py): natural requests for a new task in Chinese
and English are requests, words that name an existing task or refuse one are not (issue
#38), in the reference router and in WorkHub.create, which the Bot's tasks_create calls."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from bot.assistant.access import Role
from bot.assistant.visibility import Visibility
from bot.host.notify import Notifier
from bot.llm.client import MemoryRecorder, ModelClient
from bot.llm.scripted import ScriptedProvider
from bot.memory.search import SearchService
from bot.workhub.candidates import SessionMeta, build_set
from bot.workhub.model_router import ModelRouterAdapter
from bot.workhub.new_task import asks_for_new
from bot.workhub.router import Outcome, route
from bot.workhub.service import Refusal, Requester, WorkHub
from storage.db import Database
from storage.models import Session
from storage.search.embedded import EmbeddedSearchIndex
from tests.seed import OWNER, owner_dm, task_session

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
CASES = Path(__file__).parents[1] / "data" / "gate_cases.json"
# The issue's natural requests for a new task, each refused by the gate before.
ISSUE_REQUESTS = [
    "做一个新的报表任务",
    "let's open a task for the office move",
    "单独开个任务跟进一下供应商的退款",
    "track this separately: the landlord's deposit dispute",
]
TASKS = ["新任务", "New session timeout bug", "Q3 report", "年会筹备"]


def _cset(names: list[str]) -> Any:
    metas = [
        SessionMeta(
            id=str(i),
            name=name,
            workspace=None,
            state="active",
            created_at=NOW - timedelta(days=3),
            last_message_at=NOW - timedelta(hours=2 + i),
        )
        for i, name in enumerate(names)
    ]
    return build_set(metas, now=NOW, tz=UTC)


@pytest.mark.parametrize("request_", ISSUE_REQUESTS)
def test_a_natural_request_for_a_new_task_is_new(request_: str) -> None:
    assert route(request_, _cset(TASKS)).outcome is Outcome.NEW


@pytest.mark.parametrize(
    ("request_", "task"),
    [
        ("新任务里那个东西你再看看", "新任务"),
        ("any news on the new session timeout bug?", "New session timeout bug"),
    ],
)
def test_words_that_name_a_task_route_to_it_not_to_a_new_one(request_: str, task: str) -> None:
    decision = route(request_, _cset(TASKS))
    assert (decision.outcome, decision.session_id) == (Outcome.EXISTING, str(TASKS.index(task)))


@pytest.mark.parametrize(
    "request_",
    [
        "不用新开任务，放到年会筹备里就行",
        "别另起任务了",
        "don't open a new task, just add it to the Q3 report",
        "should we open a separate task for this?",
        "did you start a new task for the invoices?",
        "I've opened a separate thread with legal",
    ],
)
def test_a_refused_questioned_or_told_new_task_is_no_request(request_: str) -> None:
    assert not asks_for_new(request_, TASKS)
    assert route(request_, _cset(TASKS)).outcome is not Outcome.NEW


def test_a_creation_verb_asks_for_a_new_task_even_beside_a_task_named_so() -> None:
    """With a task named 新任务, "开个新任务" still asks for one: the verb is not its name."""
    assert asks_for_new("开个新任务吧，帮我找个周末的羽毛球场", ["新任务"])
    assert not asks_for_new("新任务：整理三月份的差旅发票", ["新任务"])  # names it
    assert asks_for_new("新任务：整理三月份的差旅发票", ["季度报表"])


async def test_a_new_task_the_model_proposes_unasked_becomes_a_question() -> None:
    """MAKA_WORKHUB_RECALL=model: the model's `new` passes the same gate."""
    model = ScriptedProvider([ScriptedProvider.text('{"outcome": "new"}')] * 2)
    router = ModelRouterAdapter(ModelClient(model, MemoryRecorder()), UTC)
    unasked = await router("新任务里那个东西你再看看", _cset(TASKS))
    asked = await router("做一个新的报表任务", _cset(TASKS))
    assert (unasked.outcome, unasked.fallback) == (Outcome.CLARIFY, False)
    assert "do not ask for" in unasked.reason
    assert asked.outcome is Outcome.NEW


def _gate_cases(part: str) -> tuple[int, list[str]]:
    data = json.loads(CASES.read_text(encoding="utf-8"))
    cases = [c for c in data["cases"] if c["part"] == part]
    wrong = [
        f"{c['id']} {c['request']!r}: expected {c['asks_for_new']}"
        for c in cases
        if asks_for_new(c["request"], data["tasks"][c["tasks"]]) is not c["asks_for_new"]
    ]
    return len(cases), wrong


def test_the_gate_meets_its_bar_on_the_held_out_cases() -> None:
    """tests/data/gate_cases.json, split before the gate was tuned on its other part: 53/53
    when first measured (and again after the probe cases' fixes); the bar is below it."""
    total, wrong = _gate_cases("heldout")
    assert total >= 50
    assert 1 - len(wrong) / total >= 0.90, wrong


def test_the_gate_keeps_what_it_was_tuned_on() -> None:
    """111/116 now: a figure tuned on, not a held-out one."""
    total, wrong = _gate_cases("tune")
    assert total >= 100
    assert 1 - len(wrong) / total >= 0.90, wrong


async def _hub_with(db: Database, tmp_path: Path, names: list[str]) -> tuple[WorkHub, Requester]:
    async with db.write() as s:
        conv = await owner_dm(s)
        for name in names:
            await task_session(s, conv, name)
        requester = Requester(
            conv.id, OWNER, Role.OWNER, Visibility(everything=True, conversation_id=conv.id)
        )
    search = SearchService(EmbeddedSearchIndex(tmp_path / "idx"))
    return WorkHub(db, Notifier(), search, tz=UTC), requester


async def test_the_gate_creates_on_natural_requests_and_refuses_words_naming_a_task(
    db: Database, tmp_path: Path
) -> None:
    """WorkHub.create (the Bot's tasks_create): each of the issue's requests makes a task;
    新任务里那个东西你再看看 beside a task named 新任务 makes none."""
    hub, requester = await _hub_with(db, tmp_path, ["新任务", "New session timeout bug"])
    created = [
        await hub.create(
            requester, action_id=f"c{i}", title=f"asked {i}", payload={"request": request}
        )
        for i, request in enumerate(ISSUE_REQUESTS)
    ]
    refused = await hub.create(
        requester,
        action_id="c-named",
        title="guessed",
        payload={"request": "新任务里那个东西你再看看"},
    )
    assert all(result.ok for result in created), created
    assert refused.refusal is Refusal.NOT_ASKED
    async with db.read() as s:
        assert await s.scalar(select(func.count(Session.id))) == 2 + len(ISSUE_REQUESTS)

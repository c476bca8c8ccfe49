"""The reviewer answers through its verdict tool only: reading a verdict, asking once more,
giving up with NoVerdict. No free text is ever parsed."""

from __future__ import annotations

import pytest

from bot.llm.client import ModelClient, NullRecorder
from bot.llm.scripted import PlannedReply, ScriptedProvider
from bot.llm.types import ToolCall
from bot.matters.review import (
    INSTRUCTIONS,
    NO_REASON,
    NoVerdict,
    Verdict,
    read_verdict,
    review,
)
from bot.matters.rules import Disposition, SettleRequest
from tests.matters.routed_model import APPROVE, ROLES, reject

send = ScriptedProvider.tool_call
text = ScriptedProvider.text
APPROVE_ARGS = {"decision": "approve", "reason": "ok"}


async def _review(*answers: PlannedReply) -> tuple[Verdict, ScriptedProvider]:
    provider = ScriptedProvider(answers)
    verdict = await review(
        ModelClient(provider, NullRecorder()),
        objective="reconcile the invoices",
        state_text="all 12 matched",
        recent_work=[],
        request=SettleRequest(0, Disposition.COMPLETE, "all matched", "done"),
    )
    provider.assert_exhausted()
    return verdict, provider


def test_the_scripted_model_routes_the_reviewer_by_its_system_prompt() -> None:
    assert [role for role, prefix in ROLES.items() if INSTRUCTIONS.startswith(prefix)] == ["review"]


async def test_an_approve_verdict_is_one_call_offering_only_the_verdict_tool() -> None:
    verdict, provider = await _review(APPROVE)
    assert verdict.approved
    [(_messages, tools)] = provider.requests
    [spec] = tools
    assert spec.name == "verdict"
    assert spec.parameters["properties"]["decision"]["enum"] == ["approve", "reject"]
    assert sorted(spec.parameters["required"]) == ["decision", "reason"]


async def test_a_reject_verdict_carries_its_reason_and_an_empty_reason_is_named() -> None:
    verdict, _ = await _review(reject("the totals were not checked"))
    assert verdict == Verdict(False, "the totals were not checked")
    verdict, _ = await _review(reject("  "))
    assert verdict == Verdict(False, NO_REASON)


@pytest.mark.parametrize(
    "first",
    [
        text("**APPROVE**"),
        text("Verdict: approve"),
        send("approve", {}),
        send("verdict", {"decision": "yes", "reason": "ok"}),
        send("verdict", {"decision": "approve"}),
        send("verdict", '{"decision": "approve", '),
        send("verdict", {**APPROVE_ARGS, "confidence": 0.9}),
        ScriptedProvider.tool_calls(("verdict", APPROVE_ARGS), ("verdict", APPROVE_ARGS)),
    ],
    ids=[
        "bold-text",
        "verdict-text",
        "wrong-tool",
        "bad-decision",
        "no-reason",
        "broken-json",
        "extra-argument",
        "two-calls",
    ],
)
async def test_an_answer_without_a_valid_verdict_is_asked_for_once_more(
    first: PlannedReply,
) -> None:
    verdict, provider = await _review(first, reject("check the totals"))
    assert verdict == Verdict(False, "check the totals")
    first_ask, second_ask = (messages for messages, _tools in provider.requests)
    assert second_ask[:-1] == first_ask  # the same review, plus the demand for a verdict
    assert "must call the verdict tool" in (second_ask[-1].content or "")


async def test_no_verdict_twice_raises_and_asks_no_third_time() -> None:
    provider = ScriptedProvider([text("APPROVE"), send("approve", {})])
    with pytest.raises(NoVerdict, match="no tool named 'approve'"):
        await review(
            ModelClient(provider, NullRecorder()),
            objective="o",
            state_text="",
            recent_work=[],
            request=SettleRequest(0, Disposition.COMPLETE, "r", "s"),
        )
    assert len(provider.requests) == 2


@pytest.mark.parametrize(
    ("calls", "problem"),
    [
        ([], "no tool call"),
        ([ToolCall("c1", "approve", APPROVE_ARGS)], "no tool named 'approve'"),
        ([ToolCall("c1", "verdict", {"decision": "APPROVE", "reason": "ok"})], "decision"),
        ([ToolCall("c1", "verdict", {"decision": "reject"})], "reason"),
        ([ToolCall.from_raw("c1", "verdict", "approve")], "not valid JSON"),
        ([ToolCall.from_raw("c1", "verdict", '["approve"]')], "not a JSON object"),
        (
            [ToolCall("c1", "verdict", APPROVE_ARGS), ToolCall("c2", "verdict", APPROVE_ARGS)],
            "2 tool calls",
        ),
    ],
)
async def test_read_verdict_names_what_is_wrong(calls: list[ToolCall], problem: str) -> None:
    with pytest.raises(NoVerdict, match=problem):
        await read_verdict(calls)


async def test_read_verdict_reads_a_valid_call() -> None:
    approve = ToolCall("c1", "verdict", APPROVE_ARGS)
    assert await read_verdict([approve]) == Verdict(True, "ok")
    raw = ToolCall.from_raw("c2", "verdict", '{"decision": "reject", "reason": "why?"}')
    assert await read_verdict([raw]) == Verdict(False, "why?")

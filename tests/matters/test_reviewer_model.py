"""A task's settle is reviewed by the reviewer's own model (MAKA_MODEL_REVIEWER_*) when one
is set: the review request reaches the reviewer's endpoint, the agent's turns the main one's
(two loopback OpenAI fakes, the real provider)."""

from __future__ import annotations

from bot.assistant.component import Assistant
from tests.fakes.openai_server import FakeOpenAIServer
from tests.feishu_world import WorldFactory
from tests.matters.test_matters import _delegate, _matter, _status


async def test_a_settle_is_reviewed_by_the_reviewers_own_model(make_world: WorldFactory) -> None:
    async with (
        FakeOpenAIServer(api_key="key-main") as main,
        FakeOpenAIServer(api_key="key-review") as reviewer,
        FakeOpenAIServer(api_key="key-summary") as summaries,  # whatever else asks
    ):
        main.reply_tool_calls([("events_read", {})])
        settle = {"expected_revision": 0, "disposition": "complete", "reason": "r",
                  "summary": "all done"}  # fmt: skip
        main.reply_tool_calls([("settle", settle)])
        reviewer.reply_tool_calls([("verdict", {"decision": "approve", "reason": "checked"})])
        async with make_world(
            bot=Assistant(),
            bot_debounce=0.0,
            model_base_url=main.base_url,
            model_api_key="key-main",
            model_name="agent-model",
            model_reviewer_base_url=reviewer.base_url,
            model_reviewer_api_key="key-review",
            model_reviewer_name="reviewer-model",
            model_summary_base_url=summaries.base_url,
            model_summary_api_key="key-summary",
        ) as w:
            session_id = await _delegate(w, "reconcile the invoices")
            await _status(w, session_id, "completed")
            matter = await _matter(w, session_id)
    assert matter is not None and [r["summary"] for r in matter.work_record] == ["all done"]
    [review] = reviewer.requests
    assert review["model"] == "reviewer-model"
    assert [t["function"]["name"] for t in review["tools"]] == ["verdict"]
    assert {r["model"] for r in main.requests} == {"agent-model"}
    assert not any(
        t["function"]["name"] == "verdict" for r in main.requests for t in r.get("tools") or []
    )

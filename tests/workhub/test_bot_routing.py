"""The Bot routes through its tools; the delegated words are the user's, not the model's."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bot.llm.types import Message
from bot.workhub.candidates import build_set
from bot.workhub.evaluation import load_dataset, session_metas
from storage.models import InboxItem
from storage.repos import matters
from storage.types import utcnow
from tests.assistant.support import all_delivered, bot_world, replies, say, send
from tests.assistant.support import sleep as sleep_step
from tests.fakes.openai_server import FakeOpenAIServer
from tests.feishu_world import WorldFactory
from tests.matters.routed_model import RoutedModel
from tests.seed import owner_dm, task_session

DATASET = Path(__file__).parents[1] / "data" / "recall_cases.json"


async def test_delegation_carries_the_users_words_from_the_inbox_item(
    make_world: WorldFactory,
) -> None:
    chosen: dict[str, str] = {}

    def pick_redis(messages: list[Message]) -> object:
        framed = messages[-1].content or ""
        listing = json.loads(framed.split("\n", 1)[1].rsplit("\n", 1)[0])
        assert all(not c["ref"].isdigit() for c in listing["candidates"])  # refs, not ids
        target = next(c for c in listing["candidates"] if c["name"] == "Redis timeout")
        recall = listing["recall"]  # Recall's proposal for the user's words, with its reason
        assert recall["proposal"] in ("existing", "clarify", "new") and recall["reason"]
        assert recall["ref"] in (None, *(c["ref"] for c in listing["candidates"]))
        chosen.update(set_id=listing["candidate_set_id"], ref=target["ref"])
        return send(
            "tasks_delegate",
            {
                "candidate_set_id": chosen["set_id"],
                "candidate_ref": chosen["ref"],
                "text": "user wants a follow-up",
            },
        )

    # Routed by role: the Redis task's own agent (adopting the delegation) waits, unscripted,
    # instead of taking one of the Bot's steps.
    model = RoutedModel()
    model.add(
        "bot",
        send("tasks_candidates", {}),
        pick_redis,
        send("send_user", {"text": "handed to the Redis task"}),
        sleep_step,
    )
    async with bot_world(make_world, model) as w:  # type: ignore[arg-type]
        db = w.app.services.db
        now = utcnow()
        async with db.write() as s:
            conv = await owner_dm(s)
            sessions = {
                name: await task_session(
                    s,
                    conv,
                    name,
                    created_at=now - timedelta(days=1),
                    last_message_at=now - timedelta(minutes=i),
                )
                for i, name in enumerate(("Redis timeout", "Billing export"))
            }
        await say(w, "把 staging 的 Redis 超时问题继续跟进一下")
        assert await replies(w, 1) == ["handed to the Redis task"]
        await all_delivered(w)
        async with db.read() as s:
            items = (
                await s.scalars(select(InboxItem).where(InboxItem.session_id.is_not(None)))
            ).all()
    [item] = items
    assert item.session_id == sessions["Redis timeout"].id
    assert item.kind == "delegation"
    assert item.payload["request"] == "把 staging 的 Redis 超时问题继续跟进一下"
    assert item.payload["note"] == "user wants a follow-up"


async def test_the_bot_is_told_in_one_line_that_a_cancelled_task_takes_no_follow_ups(
    make_world: WorldFactory,
) -> None:
    told: dict[str, str] = {}

    def delegate_to_the_cancelled_one(messages: list[Message]) -> object:
        framed = messages[-1].content or ""
        listing = json.loads(framed.split("\n", 1)[1].rsplit("\n", 1)[0])
        target = next(c for c in listing["candidates"] if c["name"] == "Redis timeout")
        assert target["state"] == "cancelled"
        told["recall"] = json.dumps(listing["recall"])
        return send(
            "tasks_delegate",
            {
                "candidate_set_id": listing["candidate_set_id"],
                "candidate_ref": target["ref"],
                "text": "user wants a follow-up",
            },
        )

    def tell_the_user(messages: list[Message]) -> object:
        framed = messages[-1].content or ""  # the tool's answer, framed as data
        told["result"] = framed.split("\n", 1)[1].rsplit("\n", 1)[0]
        return send("send_user", {"text": "That task was cancelled; shall I start a new one?"})

    model = RoutedModel()
    model.add(
        "bot",
        send("tasks_candidates", {}),
        delegate_to_the_cancelled_one,
        tell_the_user,
        sleep_step,
    )
    async with bot_world(make_world, model) as w:  # type: ignore[arg-type]
        db = w.app.services.db
        async with db.write() as s:  # cancelled before any turn ran (one transaction)
            conv = await owner_dm(s)
            task = await task_session(s, conv, "Redis timeout")
            item = InboxItem(
                session_id=task.id,
                kind="delegation",
                payload={"request": "look into the Redis timeouts", "conversation_id": conv.id},
                dedupe_key="first",
                created_at=utcnow(),
            )
            s.add(item)
            await s.flush()
            matter = await matters.adopt(s, task.id, utcnow())
            assert matter is not None
            await matters.set_status(s, matter, "cancelled", utcnow())
            item.delivered_at = utcnow()
            await task_session(s, conv, "Billing export")
        await say(w, "Redis timeout 那个再跟进一下")
        assert await replies(w, 1) == ["That task was cancelled; shall I start a new one?"]
        await all_delivered(w)
        async with db.read() as s:
            items = (
                await s.scalars(select(InboxItem).where(InboxItem.session_id == task.id))
            ).all()
    assert [i.payload["request"] for i in items] == ["look into the Redis timeouts"]
    result = told["result"]
    assert result.startswith("error: candidate_cancelled: the task 'Redis timeout' was cancelled")
    assert "\n" not in result and "which task they mean" not in result
    recall = json.loads(told["recall"])  # Recall's proposal for those words says so too
    assert recall["proposal"] == "existing" and "cancelled" in recall["reason"]


async def _eval_recall(dataset: Path, *args: str, **env: str) -> dict[str, Any]:
    """`maka eval recall --json` as a user runs it: a real process, its JSON report."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli.main",
        "eval",
        "recall",
        "--dataset",
        str(dataset),
        "--json",
        *args,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    report: dict[str, Any] = json.loads(out)
    return report


async def test_eval_recall_runs_on_the_shipped_dataset_and_evidence_helps(tmp_path: Path) -> None:
    report = await _eval_recall(DATASET, MAKA_DATA_DIR=str(tmp_path))
    variants = report["variants"]
    keys = {
        "cases",
        "correct_target_rate",
        "wrong_target_rate",
        "clarification_rate",
        "p50_ms",
        "p95_ms",
        "bytes_read",
        "model_input_chars",
        "summary_calls",
        "model_fallbacks",
    }
    assert set(variants) == {"baseline", "summaries", "summaries_evidence"}
    assert all(set(v) == keys for v in variants.values())
    assert variants["baseline"]["cases"] >= 40
    best, base = variants["summaries_evidence"], variants["baseline"]
    assert best["correct_target_rate"] > base["correct_target_rate"]
    assert best["wrong_target_rate"] <= base["wrong_target_rate"]
    position_33 = [c for c in report["cases"] if c["id"] == "edge-03"]
    assert all(c[v]["outcome"] != "existing" for c in position_33 for v in variants)
    assert all(c[v]["reason"] for c in report["cases"] for v in variants)
    assert base["summary_calls"] == 0 < best["summary_calls"]
    assert base["bytes_read"] == 0 < best["bytes_read"]  # only evidence reads the logs
    assert best["model_fallbacks"] == 0


async def test_the_held_out_set_meets_the_bar_the_issue_set(tmp_path: Path) -> None:
    """Written blind (tests/data/make_recall_cases_heldout.py): summaries+evidence at least
    85% correct and at most 3% wrong, each variant right more often than the one before, and
    a task outside the 32 never chosen."""
    heldout = DATASET.with_name("recall_cases_heldout.json")
    report = await _eval_recall(heldout, MAKA_DATA_DIR=str(tmp_path))
    variants = report["variants"]
    best = variants["summaries_evidence"]
    assert best["cases"] >= 100
    assert best["correct_target_rate"] >= 0.85, best
    assert best["wrong_target_rate"] <= 0.03, best
    rates = [variants[v]["correct_target_rate"] for v in ("baseline", "summaries")]
    assert rates[0] < rates[1] < best["correct_target_rate"]
    dataset = load_dataset(heldout)
    snapshot_of = {c.id: dataset.snapshots[c.snapshot] for c in dataset.cases}
    window = {
        case_id: {c.meta.id for c in build_set(metas, now=snap.now, tz=UTC).candidates}
        for case_id, snap in snapshot_of.items()
        for metas in [session_metas(snap)]
    }
    chosen = [
        (case["id"], case[v]["session_id"])
        for case in report["cases"]
        for v in variants
        if case[v]["outcome"] == "existing"
    ]
    assert chosen and all(session_id in window[case_id] for case_id, session_id in chosen)


async def test_eval_with_the_model_router_reports_its_fallbacks_apart(tmp_path: Path) -> None:
    """The model answers once with a decision, then with text no router can read: those are
    fallbacks to the reference router, never scored as the model's."""
    data = json.loads(DATASET.read_text(encoding="utf-8"))
    data["cases"] = data["cases"][:2]
    data["snapshots"] = {c["snapshot"]: data["snapshots"][c["snapshot"]] for c in data["cases"]}
    small = tmp_path / "two_cases.json"
    small.write_text(json.dumps(data), encoding="utf-8")
    async with FakeOpenAIServer() as server:
        server.reply_text('{"outcome": "clarify", "reason": "two could fit"}')
        report = await _eval_recall(
            small,
            "--router",
            "model",
            MAKA_DATA_DIR=str(tmp_path),
            MAKA_MODEL_BASE_URL=server.base_url,
            MAKA_MODEL_API_KEY=server.api_key,
            MAKA_MODEL_NAME="fake",
        )
        calls = len(server.requests)
    variants = report["variants"]
    assert calls == 6  # 2 cases x 3 variants, each through the model
    assert sum(v["model_fallbacks"] for v in variants.values()) == 5
    first = report["cases"][0]["baseline"]
    assert first["outcome"] == "clarify" and first["reason"] == "two could fit"
    assert all(v["model_input_chars"] > 0 for v in variants.values())

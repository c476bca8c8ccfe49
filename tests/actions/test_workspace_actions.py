"""Tasks and documents made as the owner, through the real Bot, the actions ledger and the
Feishu fake: nothing before the owner's Approve; one task after it, with the click delivered
twice and with a crash between Feishu's answer and the recorded result; Reject makes nothing;
a task completed once; a document created once with its text; without a sign-in the action
fails with "sign in again"."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from bot.actions.worker import ActionWorker
from bot.llm.scripted import ScriptedProvider
from storage.repos import actions as repo
from storage.types import utcnow
from tests.actions.support import click, settled, the_approval_card
from tests.assistant.support import bot_world, quiet, say, send
from tests.assistant.support import sleep as sleep_step
from tests.feishu_world import OWNER, FeishuWorld, WorldFactory
from tests.owner.support import PUBLIC_URL, SECRET_KEY, sign_in
from tests.sources.test_app import synced

TASK = {"summary": "order zeppelin helium", "due": "2026-12-24T18:00", "reason": "asked to"}
DOC = {"title": "Launch notes", "text": "first line\nsecond line", "reason": "asked to"}


@asynccontextmanager
async def signed_in(
    make_world: WorldFactory, *steps: Any, signed: bool = True
) -> AsyncIterator[FeishuWorld]:
    provider = ScriptedProvider([*steps, sleep_step])
    async with bot_world(make_world, provider, public_url=PUBLIC_URL, secret_key=SECRET_KEY) as w:
        if signed:
            assert (await sign_in(w)).status == 200
        yield w


async def test_a_task_waits_for_approve_and_is_created_once_though_clicked_twice(
    make_world: WorldFactory,
) -> None:
    async with signed_in(make_world, send("create_task", TASK)) as w:
        await say(w, "remind me to order the helium")
        card = await the_approval_card(w)
        assert "order zeppelin helium" in card.content and "2026-12-24" in card.content
        await quiet(w)
        assert w.fake.tasks == {}  # nothing before the click
        event = await click(w, card, "Approve")
        status, body = await w.events.post(event)  # the same click, delivered again
        assert status == 200, body
        row = await settled(w, 1, repo.DONE)
        await quiet(w)
        [task] = w.fake.tasks.values()
        assert task.summary == "order zeppelin helium" and task.due_ms is not None
        assert task.client_token == "maka-action-1"
        assert row.result and task.guid in row.result and row.attempts == 1


async def test_a_crash_after_the_task_is_created_makes_no_second_task(
    make_world: WorldFactory,
) -> None:
    async with signed_in(make_world, send("create_task", TASK)) as w:
        services = w.app.services
        await say(w, "remind me to order the helium")
        await the_approval_card(w)
        doomed = ActionWorker(services, owner="crashed-host", lease=timedelta(milliseconds=300))
        async with services.db.write() as s:  # approved and claimed at once, by a doomed host
            assert await repo.decide(s, 1, to=repo.APPROVED, by=OWNER, now=utcnow())
            [row] = await repo.claim_due(
                s, owner=doomed.owner, now=utcnow(), limit=1, lease=doomed.lease
            )
        state, _ = await doomed.execute(row)  # the task is created...
        assert state == repo.DONE and len(w.fake.tasks) == 1  # ...and the host dies here
        row = await settled(w, 1, repo.DONE)  # the running worker takes the row over
        assert row.attempts == 2  # run twice...
        assert len(w.fake.tasks) == 1  # ...one task
        assert w.fake.calls("/open-apis/task/v2/tasks", "POST") == 2


async def test_reject_creates_no_task(make_world: WorldFactory) -> None:
    async with signed_in(make_world, send("create_task", TASK)) as w:
        await say(w, "remind me to order the helium")
        await click(w, await the_approval_card(w), "Reject")
        await settled(w, 1, repo.REJECTED)
        await quiet(w)
        assert w.fake.tasks == {}
        assert w.fake.calls("/open-apis/task/v2/tasks", "POST") == 0


async def test_a_synced_task_is_completed_by_its_title(make_world: WorldFactory) -> None:
    steps = send("complete_task", {"task": "renew the platypus licence", "reason": "done"})
    async with signed_in(make_world, steps) as w:
        task = w.fake.put_task("renew the platypus licence")
        await say(w, "/sync tasks")
        await synced(w, "tasks:owner")
        await say(w, "the platypus licence is renewed")
        card = await the_approval_card(w)
        assert "renew the platypus licence" in card.content
        await click(w, card, "Approve")
        await settled(w, 1, repo.DONE)
        assert task.completed_at > 0


async def test_a_document_is_created_once_with_its_text_even_after_a_crash(
    make_world: WorldFactory,
) -> None:
    async with signed_in(make_world, send("create_document", DOC)) as w:
        services = w.app.services
        await say(w, "write down the launch notes")
        await the_approval_card(w)
        doomed = ActionWorker(services, owner="crashed-host", lease=timedelta(milliseconds=300))
        async with services.db.write() as s:
            assert await repo.decide(s, 1, to=repo.APPROVED, by=OWNER, now=utcnow())
            [row] = await repo.claim_due(
                s, owner=doomed.owner, now=utcnow(), limit=1, lease=doomed.lease
            )
        state, _ = await doomed.execute(row)
        assert state == repo.DONE
        row = await settled(w, 1, repo.DONE)
        assert row.attempts == 2
        [doc] = w.fake.docs.values()
        assert doc.name == "Launch notes" and doc.text == "first line\nsecond line"
        assert row.result and doc.token in row.result


async def test_without_a_sign_in_an_approved_task_fails_with_sign_in_again(
    make_world: WorldFactory,
) -> None:
    async with signed_in(make_world, send("create_task", TASK), signed=False) as w:
        await say(w, "remind me to order the helium")
        await click(w, await the_approval_card(w), "Approve")
        row = await settled(w, 1, repo.FAILED)
        assert (row.last_error or "").startswith("sign in again"), row.last_error
        assert row.attempts == 1  # no retry storm
        assert w.fake.tasks == {}

"""What a forget does to syncing: a whole chat or source stops syncing when the forget is
confirmed (a sync running then loses its lease, none is asked for or claimed after), the bot's
own chat keeps its live messages and says so, and a person or date range stops nothing.
Both databases; the chat test runs the real app."""

from __future__ import annotations

from datetime import UTC, timedelta

from sqlalchemy import update

from bot.forget.parse import parse_words
from bot.forget.syncing import GOES_ON, plan_line
from bot.forget.syncing import stop as stop_syncing
from bot.llm.scripted import ScriptedProvider
from storage.db import Database
from storage.models import Source
from storage.repos import forgets, source_stops
from storage.repos import sources as source_repo
from storage.types import utcnow
from tests.assistant.support import bot_world, replies, say
from tests.feishu_world import WorldFactory
from tests.memory.test_forget import MAIL, OTHER, TEAM, seed

LEASE = timedelta(minutes=2)


async def store_forget(db: Database, words: list[str]) -> list[str]:
    """A forget stored as `/forget … confirm` stores it: the names it stopped."""
    sel, _ = parse_words(words, UTC)
    async with db.write() as tx:
        request_id = await forgets.create(tx, sel, "ou_owner", utcnow())
        return await stop_syncing(tx, sel, request_id, utcnow())


async def test_forgetting_a_chat_the_bot_is_in_stops_its_history_sync_not_its_live_messages(
    make_world: WorldFactory,
) -> None:
    async with bot_world(make_world, ScriptedProvider([])) as w:
        await seed(w.app.services.db)
        await say(w, "/forget chat oc_team")
        [plan] = await replies(w, 1)
        assert "It also stops syncing feishu:oc_team until you send /sync resume" in plan, plan
        assert "I am in that chat: what is sent there from now on still reaches me" in plan

        await say(w, "/forget chat oc_team confirm")
        done = (await replies(w, 2))[1]
        assert "Forgot chat oc_team" in done and "Stopped syncing feishu:oc_team" in done, done

        await say(w, "/sync feishu oc_team")
        refused = (await replies(w, 3))[2]
        assert refused.startswith("feishu:oc_team is stopped by forget #1 on "), refused
        await say(w, "/sync feishu oc_other")  # the other chat syncs as before
        assert (await replies(w, 4))[3].startswith("Feishu history of oc_other sync requested")

        await say(w, "/sync resume oc_team", sender="ou_user")
        assert (await replies(w, 5))[4].startswith("not permitted"), "only the owner resumes"


async def test_a_person_or_a_date_range_forget_stops_no_syncing(db: Database) -> None:
    await seed(db)
    for words in (
        ["person", "ou_alice"],
        ["from", "2026-01-01"],
        ["chat", "oc_team", "to", "2026-02-01"],
    ):
        sel, _ = parse_words(words, UTC)
        async with db.read() as tx:
            assert await plan_line(tx, sel) == GOES_ON, words
        assert await store_forget(db, words) == [], words
    async with db.write() as tx:
        assert await source_repo.request_sync(tx, [TEAM, OTHER, MAIL], utcnow()) == 3


async def test_a_stopped_chat_is_never_claimed_and_its_running_sync_stores_nothing(
    db: Database,
) -> None:
    await seed(db)
    async with db.write() as tx:  # a sync of the team chat is under way
        running = await source_repo.claim_named(tx, TEAM, owner="syncer", now=utcnow(), lease=LEASE)
    assert running is not None

    assert await store_forget(db, ["chat", "Team"]) == [TEAM]  # by its name, as by its id

    async with db.write() as tx:
        moved = await source_repo.advance(
            tx, running.id, "syncer", synced_cursor={"page": 2}, added=1, now=utcnow(), lease=LEASE
        )
        assert not moved, "the running sync's next page must roll back"
        assert await source_repo.request_sync(tx, [TEAM], utcnow()) == 0
        # Wanted by a request written just before the stop (a race): still never claimed.
        await tx.execute(update(Source).where(Source.name == TEAM).values(wanted_at=utcnow()))
    async with db.write() as tx:
        assert await source_repo.claim_wanted(tx, owner="w", now=utcnow(), lease=LEASE) is None

    async with db.write() as tx:
        rows = await source_stops.stopped(tx, "oc_team")
        assert [r.name for r in rows] == [TEAM] and rows[0].stopped_by == "forget #1"
        await source_stops.resume(tx, [TEAM], utcnow())
    async with db.write() as tx:
        again = await source_repo.claim_wanted(tx, owner="w", now=utcnow(), lease=LEASE)
    assert again is not None and again.name == TEAM and again.stopped_at is None

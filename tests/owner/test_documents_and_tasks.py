"""The owner's documents and tasks, read as the owner through the Feishu fake: found in the
owner's DM and nowhere else until the owner shares the source; an edited document is found
by its new words only; a deleted document or task leaves search; without a sign-in each
source shows "sign in again"."""

from __future__ import annotations

from sqlalchemy import select

from storage.models import Source
from tests.assistant.support import answers_sent, replies, say, say_in_group
from tests.feishu_world import FeishuWorld, WorldFactory
from tests.owner.support import sign_in, signin_world
from tests.sources.test_app import synced
from tests.waiting import wait_until

DOCS, TASKS = "docs:owner", "tasks:owner"


async def answer(w: FeishuWorld, text: str, *, group: bool = False) -> str:
    before = len(answers_sent(w))
    if group:
        await say_in_group(w, text)
    else:
        await say(w, text)
    return (await replies(w, before + 1))[-1]


async def found(w: FeishuWorld, word: str) -> bool:
    return bool(await w.app.services.search.search(word))


async def sync(w: FeishuWorld, kind: str) -> None:
    started = w.fake.now()
    said = await answer(w, f"/sync {kind}")
    assert "sync requested" in said, said
    await synced(w, f"{kind}:owner", after=started - 1)


async def test_documents_and_tasks_are_found_in_the_owners_dm_and_in_a_group_once_shared(
    make_world: WorldFactory,
) -> None:
    # /search is for admins: a group's admin, who sees what the group may see.
    async with signin_world(make_world, admins=["ou_member"]) as w:
        assert (await sign_in(w)).status == 200
        w.fake.put_doc("doxRoadmap", "Roadmap", "the zeppelin launch moves to spring")
        w.fake.put_task("order zeppelin helium", due_ms=1_900_000_000_000)
        await sync(w, "docs")
        await sync(w, "tasks")
        await wait_until(lambda: found(w, "helium"), what="the task in search")
        await wait_until(lambda: found(w, "spring"), what="the document in search")

        in_dm = await answer(w, "/search zeppelin")
        assert "spring" in in_dm and "helium" in in_dm, in_dm
        in_group = await answer(w, "/search zeppelin", group=True)
        assert in_group.startswith("Nothing found"), in_group

        before = len(answers_sent(w))
        await say_in_group(w, f"/sync share {DOCS}", sender="ou_owner")
        said = (await replies(w, before + 1))[-1]
        assert "is shared with this chat" in said, said

        async def shared() -> bool:
            said = await answer(w, "/search zeppelin", group=True)
            return "spring" in said

        await wait_until(shared, what="the document found in the group once shared")
        said = await answer(w, "/search zeppelin", group=True)
        assert "helium" not in said, said  # the tasks are still the owner's alone


async def test_an_edited_document_is_found_by_its_new_words_and_a_deleted_one_leaves(
    make_world: WorldFactory,
) -> None:
    async with signin_world(make_world) as w:
        assert (await sign_in(w)).status == 200
        w.fake.put_doc("doxPlan", "Plan", "we pick the walrus design")
        w.fake.put_doc("doxNotes", "Notes", "the pelican memo")
        await sync(w, "docs")
        await wait_until(lambda: found(w, "walrus"), what="the first version in search")
        await wait_until(lambda: found(w, "pelican"), what="the other document in search")
        fetched = w.fake.calls("/open-apis/docx/v1/documents/")

        w.fake.put_doc("doxPlan", "Plan", "we pick the narwhal design")
        w.fake.docs["doxNotes"].deleted = True
        await sync(w, "docs")

        async def only_new_words() -> bool:
            return (
                await found(w, "narwhal")
                and not await found(w, "walrus")
                and not await found(w, "pelican")
            )

        await wait_until(only_new_words, what="the new version found, the old and the deleted gone")
        # Only the edited document was fetched again (the deleted one is gone from the list).
        assert w.fake.calls("/open-apis/docx/v1/documents/") == fetched + 1


async def test_documents_in_wiki_spaces_are_synced_at_every_depth(
    make_world: WorldFactory,
) -> None:
    async with signin_world(make_world) as w:
        assert (await sign_in(w)).status == 200
        top = w.fake.put_wiki_doc("7001", "doxTop", "Handbook", "the capybara policy")
        w.fake.put_wiki_doc("7001", "doxChild", "Travel", "the quokka allowance", parent=top)
        await sync(w, "docs")
        await wait_until(lambda: found(w, "capybara"), what="the top wiki page in search")
        await wait_until(lambda: found(w, "quokka"), what="the child wiki page in search")
        w.fake.docs["doxChild"].deleted = True
        await sync(w, "docs")

        async def child_gone() -> bool:
            return not await found(w, "quokka") and await found(w, "capybara")

        await wait_until(child_gone, what="the deleted wiki page gone from search")


async def test_a_completed_task_is_updated_and_a_deleted_task_leaves_search(
    make_world: WorldFactory,
) -> None:
    async with signin_world(make_world) as w:
        assert (await sign_in(w)).status == 200
        kept = w.fake.put_task("renew the platypus licence")
        gone = w.fake.put_task("book the axolotl room")
        await sync(w, "tasks")
        await wait_until(lambda: found(w, "axolotl"), what="both tasks in search")
        await wait_until(lambda: found(w, "platypus"), what="both tasks in search")

        kept.completed_at = kept.updated_at = int(w.fake.now() * 1000) + 5
        del w.fake.tasks[gone.guid]
        await sync(w, "tasks")

        async def updated() -> bool:
            hits = await w.app.services.search.search("platypus")
            done = any("done" in " ".join(h.excerpts) for h in hits)
            return done and not await found(w, "axolotl")

        await wait_until(updated, what="the deleted task gone, the completed one done")
        assert len(await w.app.services.search.search("platypus")) == 1


async def test_without_a_sign_in_the_sources_say_sign_in_again(make_world: WorldFactory) -> None:
    async with signin_world(make_world) as w:
        w.fake.put_doc("doxRoadmap", "Roadmap", "text")
        for kind in ("docs", "tasks"):
            said = await answer(w, f"/sync {kind}")
            assert "sync requested" in said, said

        async def red() -> bool:
            async with w.app.services.db.read() as s:
                rows = await s.scalars(select(Source).where(Source.kind.in_(["docs", "tasks"])))
                errors = [r.last_error or "" for r in rows.all() if ":" in r.name]
            return len(errors) == 2 and all(e.startswith("sign in again") for e in errors)

        await wait_until(red, what="both owner sources showing 'sign in again'")
        assert w.fake.calls("/open-apis/drive/v1/files") == 0
        status = await answer(w, "/sync status")
        assert "sign in again" in status, status


async def test_a_rate_limited_list_waits_the_servers_delay_and_goes_on(
    make_world: WorldFactory,
) -> None:
    async with signin_world(make_world) as w:
        assert (await sign_in(w)).status == 200
        w.fake.put_task("water the ficus")
        w.fake.rate_limit_next("/open-apis/task/v2/tasks", times=1, reset_seconds=1, method="GET")
        await sync(w, "tasks")
        await wait_until(lambda: found(w, "ficus"), what="the task in search")
        async with w.app.services.db.read() as s:
            row = await s.scalar(select(Source).where(Source.name == TASKS))
        assert row is not None and row.last_error is None
        assert w.fake.calls("/open-apis/task/v2/tasks", "GET") == 2  # refused once, then read


async def test_a_document_without_permission_is_shown_as_the_error_and_the_others_go_on(
    make_world: WorldFactory,
) -> None:
    async with signin_world(make_world) as w:
        assert (await sign_in(w)).status == 200
        w.fake.put_doc("doxSecret", "Secret", "the wombat dossier").forbidden = True
        w.fake.put_doc("doxOpen", "Open", "the dingo roster")
        await answer(w, "/sync docs")

        async def red() -> bool:
            async with w.app.services.db.read() as s:
                row = await s.scalar(select(Source).where(Source.name == DOCS))
            return row is not None and "1770032" in (row.last_error or "")

        await wait_until(red, what="the unreadable document as the source's error")
        await wait_until(lambda: found(w, "dingo"), what="the readable document in search")
        assert not await found(w, "wombat")

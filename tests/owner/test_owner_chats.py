"""The owner's own chats, read as the owner through the Feishu fake: the owner lists their
groups and chooses some in their DM; a chosen group's messages are found in the owner's DM and
not in a group; an unchosen group is never read; a second sync reads only what is new; a chat
that refuses the owner is that chat's visible error while the others sync; nobody else can
choose."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import select

from bot.llm.types import Message
from storage.models import ApiUsage, OwnerChat, Source, SourceRecord
from storage.repos import owner_chats
from storage.repos import sources as sources_repo
from storage.types import utcnow
from tests.assistant.support import answers_sent, replies, say, say_in_group, send
from tests.assistant.support import sleep as sleep_step
from tests.fakes.feishu_models import HistoryMessage
from tests.feishu_world import FeishuWorld, WorldFactory
from tests.matters.routed_model import RoutedModel
from tests.owner.support import sign_in, signin_world
from tests.sources.test_app import synced
from tests.waiting import wait_until

OWNER = "ou_owner"
BOARD, CLUB, SECRET = "oc_board", "oc_club", "oc_secret"


async def answer(w: FeishuWorld, text: str, *, group: bool = False, sender: str = OWNER) -> str:
    before = len(answers_sent(w))
    if group:
        await say_in_group(w, text, sender=sender)
    else:
        await say(w, text, sender=sender)
    return (await replies(w, before + 1))[-1]


async def found(w: FeishuWorld, word: str) -> bool:
    return bool(await w.app.services.search.search(word))


def message(w: FeishuWorld, chat_id: str, text: str, *, ago: float = 60) -> HistoryMessage:
    said = HistoryMessage.text(
        text, create_time=datetime.fromtimestamp(w.fake.now() - ago, UTC), sender_open_id="ou_li"
    )
    w.fake.add_history(chat_id, [said])
    return said


def owners_groups(w: FeishuWorld) -> None:
    """Two groups of the owner's that the bot is not in."""
    w.fake.add_chat(BOARD, name="Board", bot_in_chat=False, members={OWNER, "ou_li"})
    w.fake.add_chat(CLUB, name="Chess club", bot_in_chat=False, members={OWNER})


def messages_read(w: FeishuWorld, chat_id: str) -> list[dict[str, str]]:
    """The queries of the message lists the fake answered for `chat_id`."""
    return [
        r.query
        for r in w.fake.requests
        if r.path == "/open-apis/im/v1/messages" and r.query.get("container_id") == chat_id
    ]


async def choose(w: FeishuWorld, chat: str, unit: str) -> None:
    started = w.fake.now()
    said = await answer(w, f"/sync chats add {chat}")
    assert "will be read as you" in said, said
    await synced(w, unit, after=started - 1)


async def test_a_chosen_group_is_found_in_the_owners_dm_and_not_in_a_group(
    make_world: WorldFactory,
) -> None:
    # /search is for admins: a group's admin, who sees what the group may see.
    async with signin_world(make_world, admins=["ou_member"]) as w:
        owners_groups(w)
        message(w, BOARD, "the okapi merger closes in May")
        message(w, CLUB, "the tapir opening wins")
        assert (await sign_in(w)).status == 200

        listed = await answer(w, "/sync chats")
        assert f"[ ] Board {BOARD}" in listed and f"[ ] Chess club {CLUB}" in listed, listed
        assert "oc_group" not in listed  # the bot's group is not the owner's (not a member)

        await choose(w, "Board", f"chats:{BOARD}")
        await wait_until(lambda: found(w, "okapi"), what="the chosen group's message in search")

        in_dm = await answer(w, "/search okapi")
        assert "okapi merger" in in_dm, in_dm
        in_group = await answer(w, "/search okapi", group=True)
        assert in_group.startswith("Nothing found"), in_group

        # The unchosen group was never read, and the list marks the chosen one.
        assert messages_read(w, CLUB) == []
        assert not await found(w, "tapir")
        listed = await answer(w, "/sync chats")
        assert f"[x] Board {BOARD}" in listed and f"[ ] Chess club {CLUB}" in listed, listed


async def test_a_second_sync_reads_only_new_messages(make_world: WorldFactory) -> None:
    async with signin_world(make_world) as w:
        owners_groups(w)
        first = message(w, BOARD, "the ibis budget", ago=120)
        assert (await sign_in(w)).status == 200
        await choose(w, BOARD, f"chats:{BOARD}")
        await wait_until(lambda: found(w, "ibis"), what="the first message in search")

        message(w, BOARD, "the heron budget", ago=1)
        started = w.fake.now()
        said = await answer(w, "/sync chats now")
        assert "sync requested" in said, said
        await synced(w, f"chats:{BOARD}", after=started - 1)
        await wait_until(lambda: found(w, "heron"), what="the new message in search")

        second = messages_read(w, BOARD)[-1]
        assert int(second["start_time"]) == first.create_time_ms // 1000, second
        async with w.app.services.db.read() as s:
            stored = (
                await s.scalars(
                    select(SourceRecord.external_id).where(SourceRecord.source == f"chats:{BOARD}")
                )
            ).all()
        assert len(stored) == 2, stored

        async def counted() -> bool:  # the tenant's quota counts calls made as the owner too
            async with w.app.services.db.read() as s:
                calls = await s.scalars(
                    select(ApiUsage.calls).where(ApiUsage.api == "im.message.list")
                )
                return sum(calls.all()) == len(messages_read(w, BOARD))

        await wait_until(counted, what="the message lists counted in api_usage")


async def test_a_chat_that_refuses_the_owner_is_its_error_and_the_others_sync(
    make_world: WorldFactory,
) -> None:
    async with signin_world(make_world) as w:
        owners_groups(w)
        w.fake.add_chat(SECRET, name="Secret", chat_type="p2p", bot_in_chat=False)
        message(w, BOARD, "the gecko roadmap")
        message(w, SECRET, "the lynx salary")
        assert (await sign_in(w)).status == 200
        # A direct message is added by its chat id; the owner is not in this one.
        said = await answer(w, f"/sync chats add {SECRET}")
        assert "will be read as you" in said, said
        await choose(w, BOARD, f"chats:{BOARD}")

        async def red() -> bool:
            async with w.app.services.db.read() as s:
                row = await s.scalar(select(Source).where(Source.name == f"chats:{SECRET}"))
            return row is not None and "230027" in (row.last_error or "")

        await wait_until(red, what="the refusing chat's error on its source")
        await wait_until(lambda: found(w, "gecko"), what="the other chat in search")
        assert not await found(w, "lynx")
        status = await answer(w, "/sync status")
        assert f"chats:{SECRET}" in status and "230027" in status, status
        async with w.app.http.get(f"{w.app.url}/status.json") as resp:  # the status page
            page = await resp.text()
        assert resp.status == 200 and f"chats:{SECRET}" in page and "230027" in page, page[:500]


async def test_a_chat_the_bot_is_in_is_not_chosen_twice(make_world: WorldFactory) -> None:
    async with signin_world(make_world) as w:
        w.fake.chats["oc_group"].members.add(OWNER)
        assert (await sign_in(w)).status == 200
        async with w.app.services.db.write() as s:  # the history sync observed the group
            await sources_repo.ensure(
                s, name="feishu:oc_group", kind="feishu", scope="group:oc_group", title="team",
                now=utcnow(),
            )  # fmt: skip
        listed = await answer(w, "/sync chats")
        assert "[bot is in] team oc_group" in listed, listed
        said = await answer(w, "/sync chats add team")
        assert said.startswith("I am in team already"), said
        async with w.app.services.db.read() as s:
            assert (await s.scalars(select(OwnerChat))).all() == []


async def test_only_the_owner_in_their_dm_chooses_chats(make_world: WorldFactory) -> None:
    async with signin_world(make_world, admins=["ou_member"]) as w:
        owners_groups(w)
        assert (await sign_in(w)).status == 200
        refused = "not permitted: only the owner chooses their chats, in their DM with me"
        assert await answer(w, f"/sync chats add {BOARD}", sender="ou_user") == refused
        assert await answer(w, f"/sync chats add {BOARD}", group=True) == refused
        assert await answer(w, "/sync chats", group=True, sender=OWNER) == refused
        async with w.app.services.db.read() as s:
            assert (await s.scalars(select(OwnerChat))).all() == []
        assert w.fake.calls("/open-apis/im/v1/chats") == 0

        said = await answer(w, f"/sync chats remove {BOARD}")
        assert "is not one of your chosen chats" in said, said


def tell_what_search_found(seen: list[str]) -> Callable[[list[Message]], object]:
    def step(messages: list[Message]) -> object:
        result = next(m.content or "" for m in reversed(messages) if m.name == "memory_search")
        seen.append(result)
        return send("send_user", {"text": "searched"})

    return step


async def test_the_bots_memory_search_finds_a_chosen_chat_only_in_the_owners_dm(
    make_world: WorldFactory,
) -> None:
    seen: list[str] = []
    model = RoutedModel()
    for _ in ("dm", "group"):
        model.add(
            "bot",
            send("memory_search", {"query": "okapi merger"}),
            tell_what_search_found(seen),
            sleep_step,
        )
    async with signin_world(make_world, model) as w:
        owners_groups(w)
        message(w, BOARD, "the okapi merger closes in May")
        assert (await sign_in(w)).status == 200
        await choose(w, BOARD, f"chats:{BOARD}")
        await wait_until(lambda: found(w, "okapi"), what="the chosen group's message in search")

        before = len(answers_sent(w))
        await say(w, "what about the okapi merger?")
        await replies(w, before + 1)
        await say_in_group(w, "what about the okapi merger?")
        await replies(w, before + 2)
        in_dm, in_group = seen
        assert "chat message" in in_dm and "closes in May" in in_dm, in_dm
        assert "closes in May" not in in_group, in_group


async def test_maka_sync_chats_reads_the_chosen_chats_now(make_world: WorldFactory) -> None:
    import io

    from bot.sync.cli import run_sync_now

    async with signin_world(make_world) as w:
        owners_groups(w)
        assert (await sign_in(w)).status == 200
        async with w.app.services.db.write() as s:
            await owner_chats.choose(
                s, chat_id=CLUB, title="Chess club", chat_type="group", by=OWNER, now=utcnow()
            )
        message(w, CLUB, "the marmot gambit")
        out = io.StringIO()
        assert await run_sync_now(w.app.services.settings, "chats", out=out) == 0, out.getvalue()
        assert f"chats:{CLUB}: 1 read, 1 new" in out.getvalue(), out.getvalue()


async def test_a_chosen_chat_the_bot_joins_later_is_left_to_the_history_sync(
    make_world: WorldFactory,
) -> None:
    async with signin_world(make_world) as w:
        owners_groups(w)
        message(w, BOARD, "the puffin plan")
        assert (await sign_in(w)).status == 200
        await choose(w, BOARD, f"chats:{BOARD}")
        read_before = len(messages_read(w, BOARD))

        w.fake.chats[BOARD].bot_in_chat = True  # the bot is added; the history sync sees it
        async with w.app.services.db.write() as s:
            await sources_repo.ensure(
                s, name=f"feishu:{BOARD}", kind="feishu", scope=f"group:{BOARD}", title="Board",
                now=utcnow(),
            )  # fmt: skip
        said = await answer(w, "/sync chats now")
        assert "sync requested" in said, said

        async def left() -> bool:
            async with w.app.services.db.read() as s:
                row = await s.scalar(select(Source).where(Source.name == f"chats:{BOARD}"))
            return row is not None and "the bot is in this chat" in (row.last_error or "")

        await wait_until(left, what="the chat marked as the history sync's")
        assert len(messages_read(w, BOARD)) == read_before  # not read again as the owner


async def test_replies_in_a_thread_are_read_and_new_ones_found_on_the_next_sync(
    make_world: WorldFactory,
) -> None:
    async with signin_world(make_world) as w:
        owners_groups(w)
        root = message(w, BOARD, "thread: the lemur budget", ago=300)
        root.thread_id = "omt_lemur"

        def reply(text: str, ago: float) -> None:
            said = message(w, BOARD, text, ago=ago)
            said.thread_id, said.root_id = "omt_lemur", root.message_id

        reply("the lemur budget doubles", ago=200)
        message(w, BOARD, "lunch is at noon", ago=100)  # the cursor moves past the root
        assert (await sign_in(w)).status == 200
        await choose(w, BOARD, f"chats:{BOARD}")
        await wait_until(lambda: found(w, "doubles"), what="the thread's reply in search")

        reply("the lemur budget is approved", ago=1)
        said = await answer(w, "/sync chats now")
        assert "sync requested" in said, said
        await wait_until(lambda: found(w, "approved"), what="the thread's new reply in search")
        again = [q for q in messages_read(w, "omt_lemur") if q["sort_type"] == "ByCreateTimeDesc"]
        assert len(again) == 1, again  # looked at again, newest first, not read whole


async def test_a_chosen_chat_stopped_by_a_forget_is_listed_so_until_added_again(
    make_world: WorldFactory,
) -> None:
    async with signin_world(make_world) as w:
        owners_groups(w)
        assert (await sign_in(w)).status == 200
        await choose(w, BOARD, f"chats:{BOARD}")
        said = await answer(w, f"/forget chat {BOARD} confirm")
        assert "stop" in said.lower(), said
        listed = await answer(w, "/sync chats")
        assert f"[stopped by forget] Board {BOARD}" in listed, listed
        said = await answer(w, f"/sync chats add {BOARD}")
        assert "forgot" in said.lower(), said  # only new messages come back
        listed = await answer(w, "/sync chats")
        assert f"[x] Board {BOARD}" in listed, listed

"""Files sent on Feishu: downloaded once, read, shown to the Bot as data, searchable where
their message is; failures give one line and never hold the rest up."""

from __future__ import annotations

from bot.llm.scripted import ScriptedProvider
from storage.models import SourceRecord
from storage.repos import attachments
from tests.assistant.support import bot_world, replies, say, say_in_group, send
from tests.assistant.support import sleep as sleep_step
from tests.attachments.fixtures import fake, make_world, quick_retries  # noqa: F401
from tests.attachments.support import blob_count, send_file, settled, user_texts
from tests.fakes.feishu_models import RESOURCE_NOT_THE_SENDER, RESOURCE_UNSUPPORTED
from tests.feishu_world import WorldFactory
from tests.waiting import wait_until

TOKEN = "status-token-4711"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
WORD = "zebrafishcatalogue"
NOTES = f"Quarterly notes\nThe {WORD} project ships on Friday.\n".encode()


async def test_a_text_file_in_the_owners_dm_reaches_the_model_as_data_and_search_there_only(
    make_world: WorldFactory,  # noqa: F811
) -> None:
    provider = ScriptedProvider([send("send_user", {"text": "read it"}), sleep_step])
    async with bot_world(make_world, provider, admins=["ou_member"]) as w:
        message_id = await send_file(w, "notes.txt", NOTES, key="file_v3_notes")
        assert await replies(w, 1) == ["read it"]
        row = await settled(w, message_id)
        search = w.app.services.search

        async def indexed() -> bool:  # the record, not only the turn's log that showed it
            return any(h.kind == "source_message" for h in await search.search(WORD))

        await wait_until(indexed, what="the attachment's record in the search index")
        await say(w, f"/search {WORD}")
        owner_answer = (await replies(w, 2))[1]
        await say_in_group(w, f"/search {WORD}")
        group_answer = (await replies(w, 3))[2]
    shown = "\n".join(user_texts(provider.requests))
    assert '<data source="attachment notes.txt (' in shown
    assert WORD in shown.split("<data", 1)[1]
    assert row.state == attachments.DONE and row.record_id is not None
    assert "attachment 'notes.txt'" in owner_answer and WORD in owner_answer
    assert "Nothing found" in group_answer


async def test_the_same_file_sent_twice_is_stored_once_and_both_are_read(
    make_world: WorldFactory,  # noqa: F811
) -> None:
    async with make_world() as w:
        first = await send_file(w, "notes.txt", NOTES, key="file_v3_a")
        second = await send_file(
            w, "copy.txt", NOTES, key="file_v3_b", chat_id="oc_dm", sender="ou_user"
        )
        rows = [await settled(w, first), await settled(w, second)]
        assert await blob_count(w) == 1
        async with w.app.services.db.read() as tx:
            texts = [(await tx.get(SourceRecord, r.record_id)) for r in rows]
    assert [r.state for r in rows] == [attachments.DONE, attachments.DONE]
    assert all(t is not None and WORD in t.text for t in texts)
    assert [t.scope for t in texts if t is not None] == ["dm:ou_owner", "dm:ou_user"]


async def test_a_download_failing_again_and_again_is_parked_and_the_next_message_answered(
    make_world: WorldFactory,  # noqa: F811
) -> None:
    provider = ScriptedProvider(
        [
            send("send_user", {"text": "about the file"}),
            sleep_step,
            send("send_user", {"text": "still here"}),
            sleep_step,
        ]
    )
    async with bot_world(make_world, provider, attachment_wait_seconds=0.5, admin_token=TOKEN) as w:
        # The first download hangs until the turn has answered, then every one fails.
        release, _ = w.fake.hold_next("/open-apis/im/v1/messages/", method="GET")
        w.fake.fail_next("/open-apis/im/v1/messages/", times=100, http_status=503, method="GET")
        message_id = await send_file(w, "notes.txt", NOTES, key="file_v3_flaky")
        assert await replies(w, 1) == ["about the file"]
        release.set()
        row = await settled(w, message_id)
        await say(w, "hello again")
        assert await replies(w, 2) == ["about the file", "still here"]
        w.fake.clear_faults()
        async with w.app.http.get(f"{w.app.url}/status.json", headers=ADMIN) as resp:
            status = await resp.json()
        await say(w, "/status")
        status_answer = (await replies(w, 3))[2]
    assert row.state == attachments.PARKED
    assert row.attempts == attachments.PARK_AFTER
    assert "503" in (row.error or "")
    shown = [i for i in status["attachments"] if i["red"]]
    assert [i["name"] for i in shown] == [f"attachment {row.id} (feishu message {message_id})"]
    assert "503" in shown[0]["detail"]
    assert "attachments: 1 parked" in status_answer
    first_turn = user_texts(provider.requests[:1])[-1]
    assert "attachment notes.txt: still being read; ask again in a moment" in first_turn


async def test_a_file_over_the_size_limit_gives_one_line(
    make_world: WorldFactory,  # noqa: F811
) -> None:
    provider = ScriptedProvider([send("send_user", {"text": "too big"}), sleep_step])
    async with bot_world(make_world, provider, attachment_max_bytes=2048) as w:
        message_id = await send_file(w, "big.log", b"x" * 5000, key="file_v3_big")
        assert await replies(w, 1) == ["too big"]
        row = await settled(w, message_id)
    assert row.state == attachments.FAILED
    assert row.error == "could not read: larger than 2 KB"
    assert (
        "attachment big.log: could not read: larger than 2 KB" in user_texts(provider.requests)[-1]
    )
    assert await blob_count(w) == 0


async def test_feishu_refusing_a_download_fails_it_with_one_line_not_retried(
    make_world: WorldFactory,  # noqa: F811
) -> None:
    async with make_world() as w:
        not_ours = await send_file(
            w, "a.pdf", b"%PDF", key="file_v3_8", error=RESOURCE_NOT_THE_SENDER
        )
        unsupported = await send_file(
            w, "b.pdf", b"%PDF", key="file_v3_43", error=RESOURCE_UNSUPPORTED
        )
        rows = [await settled(w, not_ours), await settled(w, unsupported)]
        downloads = [
            w.fake.resource_downloads("file_v3_8"),
            w.fake.resource_downloads("file_v3_43"),
        ]
    assert [r.state for r in rows] == [attachments.FAILED, attachments.FAILED]
    assert [r.error for r in rows] == [
        "could not read: Feishu does not let the bot download this file",
        "could not read: Feishu does not let bots download this kind of message's files",
    ]
    assert downloads == [1, 1]


async def test_voice_and_video_are_said_to_be_what_they_are_without_a_download(
    make_world: WorldFactory,  # noqa: F811
) -> None:
    async with make_world() as w:
        ids = []
        for message_type, content in (
            ("audio", {"file_key": "file_v3_voice", "duration": 7000}),
            ("media", {"file_key": "file_v3_video", "file_name": "demo.mp4", "duration": 61000}),
        ):
            event = w.events.message_event(
                message_type=message_type,
                content=content,
                chat_id="oc_dm",
                sender_open_id="ou_user",
            )
            ids.append(event["event"]["message"]["message_id"])
            assert (await w.events.post(event))[0] == 200
        rows = [await settled(w, message_id) for message_id in ids]
        async with w.app.services.db.read() as tx:
            texts = [(await tx.get(SourceRecord, r.record_id)) for r in rows]
    assert [t.text for t in texts if t is not None] == [
        "a voice message (7 s), not transcribed",
        "a video (61 s), not read",
    ]
    assert w.fake.resource_downloads("file_v3_voice") == 0
    assert w.fake.resource_downloads("file_v3_video") == 0

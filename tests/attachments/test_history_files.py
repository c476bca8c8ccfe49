"""A file found by the history sync (never delivered as an event) is fetched and read as one
that came by webhook, and once only when it came both ways."""

from __future__ import annotations

import json
import time

from storage.repos import sources as sources_repo
from storage.types import utcnow
from tests.attachments.fixtures import fake, make_world, quick_retries  # noqa: F401
from tests.attachments.support import send_file, settled
from tests.fakes import HistoryMessage
from tests.feishu_world import WorldFactory
from tests.sources.test_app import request, synced

WORD = "pangolinroster"


async def test_a_file_found_by_the_history_sync_is_read_and_one_seen_both_ways_once(
    make_world: WorldFactory,  # noqa: F811
) -> None:
    async with make_world(sync_feishu_interval=0) as w:
        both_ways = await send_file(
            w, "roster.txt", WORD.encode(), key="file_v3_both", chat_id="oc_group",
            chat_type="group", sender="ou_member",
        )  # fmt: skip
        only_synced = HistoryMessage(
            "om_synced_file",
            "oc_group",
            json.dumps({"file_key": "file_v3_sync", "file_name": "rota.txt"}),
            msg_type="file",
            create_time_ms=int(time.time() * 1000) - 5000,
            sender_id="ou_member",
        )
        w.fake.add_history("oc_group", [only_synced])
        w.fake.attach_resource("om_synced_file", "file_v3_sync", f"{WORD} rota".encode())
        async with w.app.services.db.write() as tx:  # the group as the chat listing finds it
            await sources_repo.ensure(
                tx, name="feishu:oc_group", kind="feishu", scope="group:oc_group",
                title="team", now=utcnow(),
            )  # fmt: skip
        await request(w, "feishu:oc_group")
        await synced(w, "feishu:oc_group")
        rows = [await settled(w, "om_synced_file"), await settled(w, both_ways)]
    assert [(r.name, r.state, r.scope) for r in rows] == [
        ("rota.txt", "done", "group:oc_group"),
        ("roster.txt", "done", "group:oc_group"),
    ]
    assert w.fake.resource_downloads("file_v3_both") == 1

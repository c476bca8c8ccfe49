"""What a recall changes in storage: memory index entries forget the removed records (an
entry left with none is deleted), a record's tombstone gets a seq after every other, and a
turn's logged batch loses exactly the recalled message's part."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select

from bot.channels.recalls import InboundRecall, recall_in, recalled_among
from storage.db import Database
from storage.models import IndexEntry, SourceRecord
from storage.repos import memory_indexes, source_records
from storage.repos.redactions import RECALLED_TEXT, redacted
from storage.repos.source_records import NewRecord

NOW = datetime(2026, 12, 6, 1, 0, tzinfo=UTC)


async def test_recalled_records_leave_the_index_entries_citing_them(db: Database) -> None:
    async with db.write() as tx:
        index = await memory_indexes.create(
            tx, name="people", criteria="who is who", scopes=None, conversation_id=None,
            created_by=None, interval_seconds=3600, now=NOW,
        )  # fmt: skip
        assert index is not None
        for key, refs in (("only-recalled", [7]), ("mixed", [7, 17, 70]), ("other", [77])):
            await memory_indexes.write_entry(
                tx, index.id, key=key, text=key, refs=refs, expected_revision=0, now=NOW
            )
        changed = await memory_indexes.forget_records(tx, [7], NOW)
        entries = {e.key: e for e in (await tx.scalars(select(IndexEntry))).all()}
    assert changed == 2
    assert set(entries) == {"mixed", "other"}
    assert entries["mixed"].refs == [17, 70] and entries["mixed"].revision == 2
    assert entries["other"].refs == [77] and entries["other"].revision == 1


async def test_a_tombstone_comes_after_every_record_even_the_newest_removed(
    db: Database,
) -> None:
    source = "feishu:oc_t"
    async with db.write() as tx:
        await source_records.add_records(
            tx,
            [
                NewRecord(source, "om_a", "group:oc_t", "first", NOW),
                NewRecord(source, "om_a#att:k1", "group:oc_t", "its file", NOW),
                NewRecord(source, "om_a_b", "group:oc_t", "a neighbour", NOW),
            ],
            NOW,
        )
        newest = await source_records.max_seq(tx)
        removed = await source_records.remove_message(
            tx, source, "om_a", scope="group:oc_t", now=NOW
        )
        rows = (await tx.scalars(select(SourceRecord).order_by(SourceRecord.id))).all()
    assert len(removed) == 2  # the message and its attachment; not "om_a_b"
    kept = {r.external_id: r for r in rows}
    assert set(kept) == {"om_a", "om_a#att:k1", "om_a_b"} and kept["om_a_b"].text == "a neighbour"
    for external_id in ("om_a", "om_a#att:k1"):
        assert kept[external_id].id > newest and kept[external_id].text == ""
        assert source_records.is_tombstone(kept[external_id].payload)


def test_a_logged_batch_loses_exactly_the_recalled_part() -> None:
    first, second = "[m1] 10:00 ou_a (user): keep this", "[m2] 10:01 ou_b (user): secret words"
    third = "[m3] 10:02 ou_a (user): and this"
    text = "\n".join([first, second, third])
    spans = {"1": [0, len(first)]}
    at = len(first) + 1
    spans["2"] = [at, at + len(second)]
    at += len(second) + 1
    spans["3"] = [at, at + len(third)]
    payload = {"inbox_items": [1, 2, 3], "spans": spans}

    out = redacted(text, payload, 2, ["secret words"])

    assert out == "\n".join([first, f"[m2] 10:01 ou_b (user): {RECALLED_TEXT}", third])
    start, end = payload["spans"]["3"]
    assert out[start:end] == third  # the later parts' spans moved with the text


def test_a_batch_logged_without_spans_loses_the_recalled_words() -> None:
    out = redacted("[m1] 10:00 ou_a (user): secret words", {}, 5, ["secret words", ""])
    assert out == f"[m1] 10:00 ou_a (user): {RECALLED_TEXT}"


async def test_a_recall_stored_before_its_message_is_found_among_messages(db: Database) -> None:
    recall = InboundRecall("feishu", "om_r", "oc_t", NOW, "message_owner", {})
    async with db.write() as tx:
        assert (await recall_in(tx, recall, NOW)).new
        assert await recalled_among(tx, "feishu", ["om_r", "om_other"]) == {"om_r"}
        assert not (await recall_in(tx, recall, NOW)).new  # stored once

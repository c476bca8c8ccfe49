"""A turn's progress card through the Feishu fake's CardKit: one card per turn that takes
time, its steps pushed coalesced with increasing sequences, done with streaming closed; no
card for a turn answered at once; a card that cannot be made degrades to nothing."""

from __future__ import annotations

import asyncio

from sqlalchemy import select, update

from bot.assistant.turn import MODEL_FAILED_REPLY
from bot.llm.scripted import ScriptedProvider
from bot.llm.types import Message, ModelUnavailable, ToolSpec
from storage.models import ProgressCard
from storage.repos import progress_cards
from tests.assistant.support import answers_sent, bot_world, cards, quiet, replies, say, send
from tests.assistant.support import sleep as sleep_step
from tests.feishu_world import FeishuWorld, WorldFactory
from tests.waiting import wait_until

SEARCH = send("memory_search", {"query": "supplier contract"})
CARDKIT = "/open-apis/cardkit/v1/cards"


async def _rows(w: FeishuWorld) -> list[ProgressCard]:
    async with w.app.services.db.read() as tx:
        return list((await tx.scalars(select(ProgressCard).order_by(ProgressCard.id))).all())


async def _card_settled(w: FeishuWorld, status: str) -> ProgressCard:
    """Waits until the one card's `status` is what the platform shows."""

    async def settled() -> bool:
        rows = await _rows(w)
        return bool(rows) and all(
            r.status == status and r.pushed_version == r.version and r.message_id for r in rows
        )

    await wait_until(settled, what=f"the progress card pushed as {status}")
    [row] = await _rows(w)
    return row


async def test_a_turn_that_searches_memory_shows_one_card_that_ends_done(
    make_world: WorldFactory,
) -> None:
    provider = ScriptedProvider([SEARCH, send("send_user", {"text": "found it"}), sleep_step])
    async with bot_world(make_world, provider) as w:
        await say(w, "what did we agree with the supplier?")
        assert await replies(w, 1) == ["found it"]
        row = await _card_settled(w, progress_cards.DONE)
        [card] = cards(w)
    assert card.title == "Working on it"
    assert card.text == "- searching memory\n- done"
    assert not card.streaming, "streaming is closed explicitly when the card ends"
    assert ("settings", card.sequence) in card.pushes
    assert row.streaming_closed and row.card_id == card.card_id


async def test_a_ping_answered_at_once_gets_no_card(make_world: WorldFactory) -> None:
    provider = ScriptedProvider([send("send_user", {"text": "pong"}), sleep_step])
    async with bot_world(make_world, provider) as w:
        await say(w, "ping")
        assert await replies(w, 1) == ["pong"]
        assert await _rows(w) == []
        assert w.fake.calls(CARDKIT) == 0


async def test_twenty_tool_calls_make_one_card_and_fewer_pushes_than_calls(
    make_world: WorldFactory,
) -> None:
    search = ("memory_search", {"query": "supplier"})
    index = ("memory_index_read", {"name": "people"})
    steps = [ScriptedProvider.tool_calls(*[search, index] * 5) for _ in range(2)]  # 20 calls
    provider = ScriptedProvider([*steps, send("send_user", {"text": "all read"}), sleep_step])
    async with bot_world(make_world, provider) as w:
        await say(w, "read everything")
        assert await replies(w, 1) == ["all read"]
        await _card_settled(w, progress_cards.DONE)
        [card] = cards(w)
    operations = 1 + len(card.pushes)  # its creation, then each update
    assert operations < 20
    sequences = [sequence for _, sequence in card.pushes]
    assert sequences == sorted(set(sequences)), "the fake refuses a sequence not increasing"
    assert card.text == "- searching memory\n- reading a memory index\n- done"


async def test_a_card_the_fake_refuses_to_create_leaves_exactly_one_answer(
    make_world: WorldFactory,
) -> None:
    provider = ScriptedProvider([SEARCH, send("send_user", {"text": "found it"}), sleep_step])
    async with bot_world(make_world, provider) as w:
        w.fake.refuse_card_create = True
        await say(w, "what did we agree?")
        assert await replies(w, 1) == ["found it"]

        async def given_up() -> bool:
            rows = await _rows(w)
            return bool(rows) and rows[0].gave_up_at is not None

        await wait_until(given_up, what="the card given up")
        await quiet(w)
        [row] = await _rows(w)
        assert [m.text for m in w.fake.sent] == ["found it"]
        assert cards(w) == [] and len(answers_sent(w)) == 1
        assert row.last_error and "300303" in row.last_error
        assert w.fake.calls(CARDKIT, "POST") == 1, "a refusal is not retried"


async def test_progress_cards_off_makes_none(make_world: WorldFactory) -> None:
    provider = ScriptedProvider([SEARCH, send("send_user", {"text": "found it"}), sleep_step])
    async with bot_world(make_world, provider, progress_cards=False) as w:
        await say(w, "what did we agree?")
        assert await replies(w, 1) == ["found it"]
        assert await _rows(w) == []
        assert w.fake.calls(CARDKIT) == 0


async def test_a_card_past_feishus_streaming_cutoff_is_updated_whole(
    make_world: WorldFactory,
) -> None:
    """Feishu closes streaming after 10 minutes (the fake's clock moved past it): the element
    update is refused, and the card is then updated whole, streaming off."""
    provider = ScriptedProvider(
        [
            SEARCH,
            send("memory_index_read", {"name": "people"}),
            send("send_user", {"text": "found it"}),
            sleep_step,
        ]
    )
    async with bot_world(make_world, provider) as w:
        first_push = w.fake.hold_next(CARDKIT + "/", method="PUT")  # the first update waits
        await say(w, "what did we agree?")
        release, arrived = first_push

        async def update_arrived() -> bool:
            return arrived.is_set()

        await wait_until(update_arrived, what="the first card update at the fake")
        w.fake.advance(601)
        release.set()
        assert await replies(w, 1) == ["found it"]
        row = await _card_settled(w, progress_cards.DONE)
        [card] = cards(w)
    assert "update" in [operation for operation, _ in card.pushes]
    assert card.text.endswith("- done") and not card.streaming
    assert row.streaming_closed


async def test_a_push_cut_short_after_using_a_sequence_jumps_past_it(
    make_world: WorldFactory,
) -> None:
    """The fake refuses a sequence not above the card's last (300317, as Feishu does): a
    push that used numbers it never stored (cut short) is answered by jumping past them."""
    release = asyncio.Event()

    async def answer_later(_m: list[Message], _t: list[ToolSpec]) -> object:
        await release.wait()
        return send("send_user", {"text": "found it"})

    provider = ScriptedProvider(
        [SEARCH, send("memory_index_read", {"name": "people"}), answer_later, sleep_step]
    )
    async with bot_world(make_world, provider) as w:
        await say(w, "what did we agree?")

        async def second_step_shown() -> bool:
            rows = await _rows(w)
            # At least the second step: on a slow machine the pusher may coalesce it with the
            # third (pushes are a second apart and show the latest state).
            return bool(rows) and rows[0].sequence >= 1 and rows[0].pushed_version >= 2

        await wait_until(second_step_shown, what="the second step pushed as an update")
        async with w.app.services.db.write() as tx:  # as if that push had never been stored
            await tx.execute(update(ProgressCard).values(sequence=0))
        release.set()
        assert await replies(w, 1) == ["found it"]
        row = await _card_settled(w, progress_cards.DONE)
        [card] = cards(w)
    assert card.text.endswith("- done") and not card.streaming
    assert row.sequence > 1000, "jumped past the numbers the cut-short push may have used"
    refused = [r for r in w.fake.requests if isinstance(r.response, dict)]
    assert any(r.response.get("code") == 300317 for r in refused)


async def test_a_turn_whose_model_fails_after_a_search_ends_its_card_failed(
    make_world: WorldFactory,
) -> None:
    def model_down(_m: list[Message], _t: list[ToolSpec]) -> object:
        raise ModelUnavailable("the provider is down")

    provider = ScriptedProvider([SEARCH, model_down])
    async with bot_world(make_world, provider) as w:
        await say(w, "what did we agree?")
        assert await replies(w, 1) == [MODEL_FAILED_REPLY]
        await _card_settled(w, progress_cards.FAILED)
        [card] = cards(w)
    assert card.text == "- searching memory\n- failed" and not card.streaming

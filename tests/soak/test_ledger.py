"""The soak's accounting (tests/soak/ledger.py), on made-up traffic: what counts as answered,
lost, duplicated and unwanted. The soak itself runs real processes: `make soak`."""

from __future__ import annotations

import json

from bot.assistant.turn import MODEL_FAILED_REPLY
from tests.fakes import SentMessage
from tests.faults.traffic import Attempt, Input
from tests.soak.ledger import Kind, Ledger, percentile


def an_input(token: str, *, acked_at: float | None = 10.0) -> Input:
    item = Input(token, "ou_u", "oc_c", f"om_{token}", {}, sent_at=9.0)
    if acked_at is not None:
        item.attempts.append(Attempt(token, "a", acked_at, 200, "", started=acked_at - 0.01))
        item.accepted_at = acked_at
    return item


def sent(n: int, text: str, reply_to: str | None = None) -> SentMessage:
    content = json.dumps({"text": text})
    return SentMessage(
        f"om_sent{n}", "oc_c", "text", content, content, "oc_c", "chat_id", "app", reply_to=reply_to
    )


def ledger_of(kinds: dict[str, Kind]) -> Ledger:
    inputs = {t: an_input(t) for t in kinds}
    ledger = Ledger(inputs)
    for token, kind in kinds.items():
        ledger.add(inputs[token], kind)
    return ledger


def test_each_kind_is_answered_its_own_way() -> None:
    ledger = ledger_of({"dm": Kind.DM, "cmd": Kind.COMMAND, "hist": Kind.HISTORY})
    messages = [sent(1, "pong dm"), sent(2, "You are ou_u", reply_to="om_cmd")]
    ledger.update(messages, {"om_sent1": 11.0, "om_sent2": 12.5})
    assert ledger.lost() == []
    assert ledger.duplicated() == {} and ledger.unwanted() == {}
    assert sorted(ledger.latencies()) == [1.0, 2.5]


def test_a_reply_to_a_command_message_that_names_a_token_answers_the_token() -> None:
    ledger = ledger_of({"dm": Kind.MENTION, "cmd": Kind.COMMAND})
    ledger.update([sent(1, "pong dm", reply_to="om_cmd")], {})
    assert ledger.answers["dm"] == 1 and ledger.lost() == ["cmd"]


def test_lost_duplicated_unwanted() -> None:
    ledger = ledger_of({"a": Kind.DM, "b": Kind.LONG, "c": Kind.COMMAND, "h": Kind.HISTORY})
    messages = [
        sent(1, "pong a"),
        sent(2, "pong a"),  # the same input answered twice
        sent(3, "Commands: ...", reply_to="om_c"),
        sent(4, "Commands: ...", reply_to="om_c"),
        sent(5, "pong h"),  # history is never answered
        sent(6, MODEL_FAILED_REPLY, reply_to="om_c"),
        sent(7, "something else"),
    ]
    ledger.update(messages[:3], {})
    ledger.update(messages, {})  # counts only what is new
    assert ledger.lost() == ["b"]
    assert ledger.duplicated() == {"a": 2, "c": 2}
    assert ledger.unwanted() == {"h": 1}
    assert len(ledger.apologies) == 1 and len(ledger.strays) == 1


def test_lost_while_running_waits_out_the_grace() -> None:
    ledger = ledger_of({"a": Kind.DM})
    ledger.inputs["never"] = an_input("never", acked_at=None)  # not accepted: not lost
    ledger.add(ledger.inputs["never"], Kind.DM)
    assert ledger.lost(now=60.0, grace=60.0) == []
    assert ledger.lost(now=70.0, grace=60.0) == ["a"]
    assert ledger.waiting() == 1


def test_percentile_is_nearest_rank() -> None:
    values = [float(n) for n in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile([3.0], 99) == 3.0
    assert percentile([], 50) is None

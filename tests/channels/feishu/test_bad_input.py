"""Bad input is a 4xx, never a 500: deep nesting, huge numbers, unstorable strings and wrong
types anywhere in a webhook request are refused (400; 401 stays for auth) or ignored, each
with one log line and no traceback, and every answer is counted."""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from bot.channels.feishu.channel import FeishuChannel
from bot.channels.feishu.normalize import UNREADABLE
from bot.channels.feishu.webhook import WEBHOOK
from bot.channels.feishu.ws import EventReader
from bot.runtime import COMPONENTS
from storage.models import InboundEvent, InboxItem, SourceRecord
from tests.apps import make_settings, running_app
from tests.channels.feishu.test_long_connection import _connected
from tests.echo_responder import EchoComponent
from tests.fakes import FeishuEventSender, FeishuFake
from tests.feishu_world import VERIFICATION_TOKEN, FeishuWorld, WorldFactory
from tests.seed import OWNER
from tests.waiting import wait_until

NASTY = "__NASTY__"  # where a raw JSON fragment goes in a serialised event
FEISHU_LOGGERS = (  # the webhook's own loggers, and aiohttp's for unhandled errors
    "bot.channels.feishu.webhook",
    "bot.channels.feishu.envelope",
    "bot.channels.feishu.normalize",
    "bot.channels.feishu.ws",
    "aiohttp.server",
    "aiohttp.web",
)


def answers() -> float:
    """Every webhook answer so far, whatever its status."""
    return sum(
        sample.value
        for metric in WEBHOOK.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
    )


def with_fragment(body: Any, fragment: str) -> bytes:
    """`body` as JSON with the string NASTY replaced by `fragment`, a raw JSON text that
    `json.dumps` could not produce (too deep, too long a number, a lone surrogate...)."""
    return json.dumps(body).replace(json.dumps(NASTY), fragment).encode()


def put(body: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    node = body
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return body


def deep(n: int, kind: str = "list") -> str:
    return "[" * n + "]" * n if kind == "list" else '{"a":' * n + "1" + "}" * n


@contextmanager
def one_log_line(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """What the block did to the webhook was logged in exactly one line, without a traceback."""
    caplog.clear()
    with caplog.at_level(logging.INFO):
        yield
    lines = [r for r in caplog.records if r.name.startswith(FEISHU_LOGGERS)]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert lines[0].exc_info is None and "\n" not in lines[0].getMessage()


async def inbox_text(w: FeishuWorld, message_id: str) -> str | None:
    async with w.app.services.db.read() as s:
        payload = await s.scalar(
            select(InboxItem.payload).where(InboxItem.dedupe_key == f"feishu:{message_id}")
        )
    return None if payload is None else str(payload["text"])


async def stored(w: FeishuWorld, message_id: str) -> bool:
    return await w.count(InboundEvent, InboundEvent.message_id == message_id) == 1


async def totals(w: FeishuWorld, message_id: str = "") -> tuple[int, ...]:
    """Inbound events, inbox items and source records; with `message_id`, also its inbound
    events. Read in one session (on SQLite, each session is a new connection)."""
    queries = [
        select(func.count()).select_from(InboundEvent),
        select(func.count()).select_from(InboxItem),
        select(func.count()).select_from(SourceRecord),
    ]
    if message_id:
        queries.append(select(func.count()).where(InboundEvent.message_id == message_id))
    async with w.app.services.db.read() as s:
        return tuple([int(await s.scalar(q) or 0) for q in queries])


def _channel(w: FeishuWorld) -> FeishuChannel:
    return next(c for c in w.app.app[COMPONENTS] if isinstance(c, FeishuChannel))


# ---- the holes, one by one ---------------------------------------------------------------------


async def test_a_deeply_nested_body_is_a_400_not_a_500(
    make_world: WorldFactory, caplog: pytest.LogCaptureFixture
) -> None:
    async with make_world() as w:
        before = answers()
        with one_log_line(caplog):
            async with w.app.http.post(w.events.webhook_url, data=b"[" * 1000) as resp:
                status, text = resp.status, await resp.text()
        assert status == 400 and "Traceback" not in text
        assert answers() == before + 1
        assert await totals(w) == (0, 0, 0)


async def test_a_deeply_nested_encrypted_body_is_a_400_not_a_500(
    make_world: WorldFactory, caplog: pytest.LogCaptureFixture
) -> None:
    async with make_world() as w:
        before = answers()
        with one_log_line(caplog):
            status, _ = await w.events.post_plaintext(deep(1000).encode())
        assert status == 400
        assert answers() == before + 1
        assert await totals(w) == (0, 0, 0)


async def test_nesting_deeper_than_any_event_is_a_400_even_within_the_recursion_limit(
    make_world: WorldFactory,
) -> None:
    async with make_world() as w:
        for depth, expected in ((40, 200), (100, 400), (500, 400), (900, 400)):
            event = w.message("deep", chat_id="oc_dm")
            body = with_fragment(put(event, ("event", "message", "extra"), NASTY), deep(depth))
            status, _ = await w.events.post_plaintext(body)
            assert status == expected, depth
        assert await w.inbound() == 1  # the 40 deep one, stored as it came


async def test_deeply_nested_message_content_is_kept_as_unreadable_content(
    make_world: WorldFactory, caplog: pytest.LogCaptureFixture
) -> None:
    async with make_world() as w:
        event = w.message("nested", chat_id="oc_dm")
        event["event"]["message"]["content"] = "[" * 1000
        message_id = event["event"]["message"]["message_id"]
        before = answers()
        with one_log_line(caplog):
            status, _ = await w.events.post(event)
        assert status == 200
        assert answers() == before + 1
        assert await inbox_text(w, message_id) == UNREADABLE


async def test_a_signed_event_with_an_absurd_create_time_is_a_400(
    make_world: WorldFactory, caplog: pytest.LogCaptureFixture
) -> None:
    async with make_world() as w:
        for create_time in ("1" * 40, "-" + "9" * 40, "9" * 5000, 1e300, [1], "soon", True):
            event = w.message("when?", chat_id="oc_dm")
            event["event"]["message"]["create_time"] = create_time
            before = answers()
            with one_log_line(caplog):
                status, _ = await w.events.post(event)
            assert status == 400, create_time
            assert answers() == before + 1
        assert await totals(w) == (0, 0, 0)


# ---- wrong types and unstorable values -------------------------------------------------------

REFUSED: list[tuple[str, tuple[str, ...], Any]] = [
    ("message_id a dict", ("event", "message", "message_id"), {"a": 1}),
    ("message_id too long for its column", ("event", "message", "message_id"), "om_" + "x" * 200),
    ("chat_id a list", ("event", "message", "chat_id"), []),
    ("sender_id a number", ("event", "sender", "sender_id"), 5),
    ("sender open_id a number", ("event", "sender", "sender_id", "open_id"), 12345),
    ("event a list", ("event",), []),
    ("message a string", ("event", "message"), "hello"),
]


async def test_wrong_types_where_a_message_is_identified_are_a_400_and_store_nothing(
    make_world: WorldFactory, caplog: pytest.LogCaptureFixture
) -> None:
    async with make_world() as w:
        for what, path, value in REFUSED:
            event = put(w.message("who?", chat_id="oc_dm"), path, value)
            with one_log_line(caplog):
                status, _ = await w.events.post(event)
            assert status == 400, what
        assert await totals(w) == (0, 0, 0)


IGNORED: list[tuple[str, tuple[str, ...], Any, str]] = [  # what, where, value, the text kept
    ("mentions a string", ("event", "message", "mentions"), "@_user_1", "hello"),
    ("mentions a number", ("event", "message", "mentions"), 7, "hello"),
    ("a mention that is a list", ("event", "message", "mentions"), [[1]], "hello"),
    (
        "mention fields",
        ("event", "message", "mentions"),
        [{"key": 1, "id": {"open_id": {}}}],
        "hello",
    ),
    ("chat_type an int", ("event", "message", "chat_type"), 1, "hello"),
    ("parent_id a dict", ("event", "message", "parent_id"), {"id": 1}, "hello"),
    ("thread_id too long", ("event", "message", "thread_id"), "t" * 300, "hello"),
    ("message_type a number", ("event", "message", "message_type"), 7, "[unknown]"),
    ("sender_type a list", ("event", "sender", "sender_type"), ["user"], "hello"),
    ("text a number", ("event", "message", "content"), json.dumps({"text": 42}), UNREADABLE),
    ("content not a string", ("event", "message", "content"), {"text": "hello"}, UNREADABLE),
    ("content not JSON", ("event", "message", "content"), "{text", UNREADABLE),
    ("a huge number in content", ("event", "message", "content"), f"[{'9' * 5000}]", UNREADABLE),
    ("a NUL in the text", ("event", "message", "content"), '{"text": "a\\u0000b"}', "a\ufffdb"),
]


async def test_wrong_types_elsewhere_in_a_message_are_ignored_and_the_message_kept(
    make_world: WorldFactory, caplog: pytest.LogCaptureFixture
) -> None:
    async with make_world() as w:
        for what, path, value, text in IGNORED:
            event = put(w.message("hello", chat_id="oc_dm"), path, value)
            message_id = event["event"]["message"]["message_id"]
            with one_log_line(caplog):
                status, _ = await w.events.post(event)
            assert status == 200, what
            assert await stored(w, message_id), what
            if path[-1] != "chat_type":  # else it is taken for a group message: not answered
                assert await inbox_text(w, message_id) == text, what


UNSTORABLE: list[tuple[str, tuple[str, ...], str]] = [
    ("an integer of 5000 digits", ("event", "message", "extra"), "9" * 5000),
    ("a number beyond float", ("event", "message", "extra"), "1e999999"),
    ("NaN", ("event", "message", "extra"), "NaN"),
    ("-Infinity", ("event", "message", "extra"), "-Infinity"),
    ("a NUL in a string", ("event", "sender", "sender_type"), '"us\\u0000er"'),
    ("a NUL in a key", ("event", "message", "extra"), '{"a\\u0000": 1}'),
    ("a lone surrogate", ("event", "message", "chat_type"), '"p2p\\ud800"'),
]


async def test_numbers_and_strings_that_cannot_be_stored_are_a_400(
    make_world: WorldFactory, caplog: pytest.LogCaptureFixture
) -> None:
    async with make_world() as w:
        for what, path, fragment in UNSTORABLE:
            event = put(w.message("store me", chat_id="oc_dm"), path, NASTY)
            with one_log_line(caplog):
                status, _ = await w.events.post_plaintext(with_fragment(event, fragment))
            assert status == 400, what
        assert await totals(w) == (0, 0, 0)


async def test_url_verification_with_odd_values_is_answered_or_refused_never_a_500(
    make_world: WorldFactory,
) -> None:
    async with make_world() as w:
        for fragment, expected in (("[1, {}]", 200), (deep(100), 400), (deep(3000), 400)):
            body = with_fragment(dict(w.events.url_verification(), challenge=NASTY), fragment)
            status, _ = await w.events.post_plaintext(body)
            assert status == expected, fragment[:20]


async def test_every_answer_is_counted_and_an_unexpected_failure_is_no_500(
    make_world: WorldFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async with make_world() as w:
        webhook = _channel(w).webhook
        assert webhook is not None

        def broken_open(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("a bug while parsing")

        async def broken_accept(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("a bug while storing")

        before = answers()
        with monkeypatch.context() as m, one_log_line(caplog):
            m.setattr(webhook.opener, "open", broken_open)
            status, _ = await w.events.post(w.message("parse me", chat_id="oc_dm"))
        assert status == 400  # a body we cannot read is the body's fault, not Feishu's to retry
        with monkeypatch.context() as m, one_log_line(caplog):
            m.setattr(webhook.ingest, "accept", broken_accept)
            status, _ = await w.events.post(w.message("store me", chat_id="oc_dm"))
        assert status == 503  # storing failed: Feishu delivers it again
        async with w.app.http.post(w.events.webhook_url, data=b" " * (2 * 1024 * 1024)) as resp:
            assert resp.status == 413
        assert answers() == before + 3
        assert await totals(w) == (0, 0, 0)


# ---- the long connection reads events the same way -------------------------------------------


def test_the_long_connection_acks_a_body_too_deep_or_too_broken_to_parse(
    caplog: pytest.LogCaptureFixture,
) -> None:
    received: list[dict[str, Any]] = []
    reader = EventReader(received.append)
    for payload in (b"[" * 5000, deep(100).encode(), b"\xff{", b'{"a": NaN}', b"[1]"):
        with one_log_line(caplog):
            assert reader._do_without_validation(payload) is None  # None: acked with 200
    assert received == []


@pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated")
async def test_a_bad_event_over_the_long_connection_is_logged_once_and_acked(
    make_world: WorldFactory, caplog: pytest.LogCaptureFixture
) -> None:
    async with make_world(feishu_mode="ws") as w:
        await _connected(w)
        app_id = w.app.services.settings.feishu_app_id
        assert app_id
        sender = w.fake.ws_event_sender(app_id)

        def event(path: tuple[str, ...], value: Any) -> dict[str, Any]:
            return put(sender.message_event(text="over ws", chat_id="oc_dm"), path, value)

        refused = [
            event(("event", "message", "extra"), json.loads(deep(100))),
            event(("event", "message", "create_time"), "1" * 40),
            event(("event", "message", "message_id"), {"a": 1}),
            event(("event", "sender", "sender_id"), 5),
        ]
        for bad in refused:
            with one_log_line(caplog):
                assert await w.fake.ws_push_event(bad) == 200  # acked: not sent again
        kept = event(("event", "message", "content"), "[" * 1000)
        with one_log_line(caplog):
            assert await w.fake.ws_push_event(kept) == 200
        assert await inbox_text(w, kept["event"]["message"]["message_id"]) == UNREADABLE
        assert await totals(w) == (1, 1, 1)

        fine = sender.message_event(text="still listening", chat_id="oc_dm")
        assert await w.fake.ws_push_event(fine) == 200

        async def answered() -> bool:
            return "echo: still listening" in [m.text for m in w.fake.sent]

        await wait_until(answered, what="the answer to the message after the bad ones")
        assert await _channel(w).readiness() is None  # still connected: nothing crashed


# ---- generated: nested and oversized values anywhere -----------------------------------------

EVENT_PATHS = [
    ("event",),
    ("event", "message"),
    ("event", "message", "message_id"),
    ("event", "message", "chat_id"),
    ("event", "message", "chat_type"),
    ("event", "message", "create_time"),
    ("event", "message", "mentions"),
    ("event", "message", "message_type"),
    ("event", "message", "parent_id"),
    ("event", "message", "root_id"),
    ("event", "message", "content"),
    ("event", "message", "extra"),
    ("event", "sender"),
    ("event", "sender", "sender_id"),
    ("event", "sender", "sender_id", "open_id"),
    ("event", "sender", "sender_type"),
    ("header",),
    ("header", "event_type"),
    ("header", "token"),
    ("schema",),
]
CONTENTS = [
    ("text", NASTY),
    ("text", {"text": NASTY}),
    ("post", {"zh_cn": {"title": NASTY, "content": [[{"tag": "text", "text": NASTY}]]}}),
    ("post", {"title": "t", "content": NASTY}),
    ("file", {"file_name": NASTY}),
]

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
fragments = st.one_of(
    st.builds(deep, st.integers(1, 3000), st.sampled_from(["list", "dict"])),
    st.integers(1, 3000).map(lambda n: "[" * n),  # never closed
    st.integers(1, 6000).map(lambda n: "9" * n),
    st.sampled_from(["1e999999", "-1e400", "1e-400", "NaN", "Infinity", "-Infinity", "-0"]),
    st.integers(0, 200_000).map(lambda n: json.dumps("x" * n)),
    st.text(max_size=40).map(json.dumps),
    st.sampled_from(['"\\u0000"', '"\\ud800"', '"a\\udfffb"', '{"\\u0000": 1}']),
    st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
        max_leaves=8,
    ).map(lambda v: json.dumps(v, allow_nan=True)),
)


@asynccontextmanager
async def keyless_world(
    tmp_path: Path, database_url: str, fake: FeishuFake
) -> AsyncIterator[FeishuWorld]:
    """A second app, without an encrypt key: plaintext events reach normalize and ingest."""
    app_id, app_secret = fake.new_app()
    settings_ = make_settings(
        tmp_path / "keyless",
        database_url,
        feishu_app_id=app_id,
        feishu_app_secret=app_secret,
        feishu_verification_token=VERIFICATION_TOKEN,
        feishu_domain=fake.url,
        owner=OWNER,
    )
    async with running_app(settings_, bot=EchoComponent()) as app:
        events = FeishuEventSender(
            f"{app.url}/feishu/events",
            app_id=app_id,
            encrypt_key=None,
            verification_token=VERIFICATION_TOKEN,
        )
        yield FeishuWorld(fake, app, events)


async def test_nested_and_oversized_values_anywhere_are_never_a_500(
    make_world: WorldFactory, tmp_path: Path, database_url: str, fake: FeishuFake
) -> None:
    async with make_world() as w, keyless_world(tmp_path, database_url, fake) as k:
        loop = asyncio.get_running_loop()

        def run(coro_factory: Callable[[], Any]) -> Any:
            return asyncio.run_coroutine_threadsafe(coro_factory(), loop).result(timeout=30)

        def post(url: str, raw: bytes, headers: dict[str, str]) -> int:
            request = urllib.request.Request(url, data=raw, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=30) as resp:
                    return int(resp.status)
            except urllib.error.HTTPError as err:
                return err.code

        @settings(
            max_examples=30,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture],
        )
        @given(
            where=st.sampled_from(["plaintext", "encrypted", "content"]),
            path=st.sampled_from([(), *EVENT_PATHS]),
            content=st.sampled_from(CONTENTS),
            fragment=fragments,
        )
        def post_nasty(
            where: str, path: tuple[str, ...], content: tuple[str, Any], fragment: str
        ) -> None:
            world = k if where == "plaintext" else w
            # a group message without a mention is stored, not answered: no bot work competes
            event = world.events.message_event(text="x", chat_id="oc_group", chat_type="group")
            message_id = event["event"]["message"]["message_id"]
            if where == "content":
                message_type, template = content
                message = event["event"]["message"]
                message["message_type"] = message_type
                message["content"] = json.dumps(template).replace(json.dumps(NASTY), fragment)
                plain = json.dumps(event).encode()
            elif path:
                plain = with_fragment(put(event, path, NASTY), fragment)
            else:
                plain = fragment.encode()  # the whole body
            raw, headers = world.events.encode_plaintext(plain)
            before_answers = answers()

            status = post(world.events.webhook_url, raw, headers)

            assert status in (200, 400, 401), status
            assert answers() == before_answers + 1
            after = run(lambda: totals(world, message_id))
            previous, rows[:] = list(rows), after[:3]
            stored = rows[0] - previous[0]
            assert stored == (rows[2] - previous[2]) in (0, 1)  # whole, with its source record
            if status != 200:
                assert rows == previous  # nothing half-stored
            if where == "content":  # content is read or replaced, never the message refused
                assert status == 200 and after[3] == 1

        rows = list(await totals(w))  # both worlds share the database: these are all rows
        await asyncio.to_thread(post_nasty)

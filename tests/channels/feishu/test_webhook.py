"""The webhook door: who gets in, and that nothing a refused request says is stored."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.feishu_world import WorldFactory


async def test_url_verification_echoes_the_challenge(make_world: WorldFactory) -> None:
    async with make_world() as w:
        status, body = await w.events.post(w.events.url_verification("c-123"))
        assert status == 200
        assert json.loads(body) == {"challenge": "c-123"}


async def test_refused_requests_get_401_or_400_and_store_nothing(
    make_world: WorldFactory,
) -> None:
    async with make_world() as w:
        event = w.message("let me in", chat_id="oc_dm")
        forged = await w.events.post(event, forge_signature=True)
        replayed = await w.events.post(event, timestamp=int(time.time()) - 3600)
        async with w.app.http.post(w.events.webhook_url, data=b"\x00garbage{") as resp:
            garbage = resp.status
        async with w.app.http.post(w.events.webhook_url, json=event) as resp:
            unencrypted = resp.status  # plaintext while an encrypt key is configured
        wrong_token = dict(event, header=dict(event["header"], token="nope"))
        bad_token = await w.events.post(wrong_token)

        assert forged[0] == 401
        assert replayed[0] == 401
        assert garbage == 400
        assert unencrypted == 401
        assert bad_token[0] == 401
        assert await w.inbound() == 0 and await w.inbox_items() == 0


async def test_unknown_event_type_is_acknowledged_not_answered(
    make_world: WorldFactory,
) -> None:
    async with make_world() as w:
        event = w.events.event_of_type("im.chat.member.bot.added_v1", {"chat_id": "oc_group"})
        status, _ = await w.events.post(event)
        assert status == 200
        assert await w.inbound() == 0


async def test_messages_wait_with_503_until_the_bot_knows_its_own_open_id(
    make_world: WorldFactory,
) -> None:
    async with make_world() as w:
        from bot.channels.feishu.channel import FeishuChannel
        from bot.runtime import COMPONENTS

        channel = next(c for c in w.app.app[COMPONENTS] if isinstance(c, FeishuChannel))
        channel._bot_open_id = None
        w.fake.fail_next("/open-apis/bot/v3/info", times=50, http_status=500)
        status, _ = await w.events.post(w.message("early bird", chat_id="oc_dm"))
        assert status == 503  # Feishu delivers it again later: nothing is lost
        assert await w.inbound() == 0


async def test_random_bodies_and_headers_never_get_a_500(make_world: WorldFactory) -> None:
    async with make_world() as w:
        url = w.events.webhook_url
        valid = w.message("seed", chat_id="oc_dm")
        raw_valid, valid_headers = w.events.encode(valid)
        statuses: list[int] = []

        header_names = st.sampled_from(
            ["X-Lark-Request-Timestamp", "X-Lark-Request-Nonce", "X-Lark-Signature", "Content-Type"]
        )
        bodies = st.one_of(
            st.binary(max_size=300),
            st.just(raw_valid),
            st.recursive(
                st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                lambda inner: (
                    st.lists(inner, max_size=4)
                    | st.dictionaries(
                        st.sampled_from(
                            [
                                "encrypt",
                                "type",
                                "challenge",
                                "token",
                                "header",
                                "event",
                                "schema",
                                "event_type",
                                "message",
                            ]
                        ),
                        inner,
                        max_size=5,
                    )
                ),
                max_leaves=12,
            ).map(lambda v: json.dumps(v).encode()),
        )

        # Any byte a client can put in a header (bytes >= 0x80 reach the server as surrogates).
        header_values = st.text(
            st.characters(max_codepoint=255, exclude_categories=("Cc",)), max_size=40
        )

        @settings(
            max_examples=150,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture],
        )
        @given(
            body=bodies,
            headers=st.dictionaries(header_names, header_values, max_size=4),
            keep_valid_headers=st.booleans(),
        )
        def post_anything(body: bytes, headers: dict[str, str], keep_valid_headers: bool) -> None:
            sent = dict(valid_headers) if keep_valid_headers else {}
            sent.update(headers)
            request = urllib.request.Request(url, data=body, headers=sent, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=10) as resp:
                    statuses.append(resp.status)
            except urllib.error.HTTPError as err:
                statuses.append(err.code)
            assert statuses[-1] < 500 or statuses[-1] == 503, statuses[-1]

        await asyncio.to_thread(post_anything)
        assert 500 not in statuses
        assert len(statuses) >= 100

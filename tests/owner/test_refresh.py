"""The owner's token kept fresh: refreshed before it expires (by a caller and by the worker),
one refresh at a time, the rotated refresh token stored; a revoked sign-in turns red and is
not tried again; a transient failure backs off; a changed MAKA_SECRET_KEY reads as "sign in
again". Token lifetimes come from the fake (its `user_token_ttl`): nothing sleeps."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from pydantic import SecretStr

from bot.owner.tokens import SignInNeeded, owner_user_token, sign_in_state
from tests.assistant.support import replies, say
from tests.feishu_world import OWNER, WorldFactory
from tests.owner.support import sign_in, signin_world, stored, token_calls
from tests.waiting import wait_until

SHORT = 120  # seconds: inside the 5 minutes in which a caller refreshes first
TOKEN_PATH = "/open-apis/authen/v2/oauth/token"


async def test_a_token_near_expiry_is_refreshed_and_the_old_refresh_token_is_spent(
    make_world: WorldFactory,
) -> None:
    async with signin_world(make_world) as w:
        w.fake.user_token_ttl = SHORT
        assert (await sign_in(w)).status == 200
        [first] = w.fake.user_tokens.values()
        fresh = await owner_user_token(w.app.services)
        assert fresh != first.access_token and w.fake.user_token_valid(fresh)
        assert token_calls(w, "refresh_token") == 1
        assert first.refresh_used  # rotated: Feishu refuses the old refresh token from now on
        again = await owner_user_token(w.app.services)  # uses the rotated one
        assert again not in (fresh, first.access_token)
        assert token_calls(w, "refresh_token") == 2
        assert [r.status for r in w.fake.requests if r.path == TOKEN_PATH] == [200, 200, 200]


async def test_callers_at_once_share_one_refresh(make_world: WorldFactory) -> None:
    async with signin_world(make_world) as w:
        w.fake.user_token_ttl = SHORT
        assert (await sign_in(w)).status == 200
        w.fake.user_token_ttl = 7200  # the refreshed token lasts: one refresh is enough
        tokens = await asyncio.gather(*(owner_user_token(w.app.services) for _ in range(5)))
        assert len(set(tokens)) == 1
        assert token_calls(w, "refresh_token") == 1


async def test_the_worker_refreshes_ahead_of_expiry(make_world: WorldFactory) -> None:
    async with signin_world(make_world) as w:
        w.fake.user_token_ttl = 2  # the worker refreshes at half its life
        assert (await sign_in(w)).status == 200
        [first] = w.fake.user_tokens.values()
        w.fake.user_token_ttl = 7200

        async def refreshed() -> bool:
            return token_calls(w, "refresh_token") >= 1 and first.refresh_used

        await wait_until(refreshed, what="the worker's refresh at the fake")
        row = await stored(w)
        assert row is not None and row.state == "ok"
        token = await owner_user_token(w.app.services)
        assert token != first.access_token and w.fake.user_token_valid(token)
        assert token_calls(w, "refresh_token") == 1


async def test_a_revoked_sign_in_turns_red_and_is_not_tried_again(
    make_world: WorldFactory,
) -> None:
    async with signin_world(make_world) as w:
        w.fake.user_token_ttl = SHORT
        assert (await sign_in(w)).status == 200
        w.fake.revoke_user_tokens(OWNER)
        for _ in range(3):
            with pytest.raises(SignInNeeded) as refused:
                await owner_user_token(w.app.services)
            assert str(refused.value).startswith("sign in again: Feishu refused the refresh")
        assert token_calls(w, "refresh_token") == 1  # no retry storm
        state = await sign_in_state(w.app.services)
        assert not state.signed_in and state.red and "20064" in (state.last_error or "")
        await say(w, "/status")
        assert "owner sign-in: not signed in (sign in again" in (await replies(w, 2))[-1]
        assert token_calls(w, "refresh_token") == 1  # nor did the worker try meanwhile

        w.fake.user_token_ttl = 7200  # signing in again makes it green
        assert (await sign_in(w, sent_before=2)).status == 200
        assert (await sign_in_state(w.app.services)).signed_in
        assert w.fake.user_token_valid(await owner_user_token(w.app.services))


async def test_a_transient_refresh_failure_backs_off(make_world: WorldFactory) -> None:
    async with signin_world(make_world) as w:
        w.fake.user_token_ttl = SHORT
        assert (await sign_in(w)).status == 200
        [first] = w.fake.user_tokens.values()
        w.fake.fail_next(TOKEN_PATH, http_status=500, code=20050, msg="server_error")
        # still valid for two minutes: the caller gets it, the refresh waits for its backoff
        assert await owner_user_token(w.app.services) == first.access_token
        assert await owner_user_token(w.app.services) == first.access_token
        assert w.fake.calls(TOKEN_PATH) == 2  # the exchange and one refresh, not one per call
        row = await stored(w)
        assert row is not None and row.state == "ok" and row.failures == 1
        assert row.retry_at is not None and "HTTP 500" in (row.last_error or "")


async def test_a_changed_secret_key_reads_as_sign_in_again(make_world: WorldFactory) -> None:
    async with signin_world(make_world) as w:
        assert (await sign_in(w)).status == 200
        services = w.app.services
        changed = services.settings.model_copy(update={"secret_key": SecretStr("another key")})
        other = dataclasses.replace(services, settings=changed)
        with pytest.raises(SignInNeeded) as refused:
            await owner_user_token(other)
        assert str(refused.value).startswith("sign in again:")
        state = await sign_in_state(other)
        assert not state.signed_in and "MAKA_SECRET_KEY" in (state.last_error or "")
        assert w.fake.user_token_valid(await owner_user_token(services))  # the right key

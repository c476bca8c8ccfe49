"""Sign-in as the owner, end to end through the real HTTP endpoints and the Feishu fake:
/signin's link, Feishu's approval, the callback, the exchange, sign-out; and every way a
callback or a /signin that must not work is refused with nothing stored."""

from __future__ import annotations

import json
import urllib.parse

from sqlalchemy import update

from bot.owner.tokens import SignInNeeded, owner_user_token, sign_in_state
from storage.models import OwnerSignInState
from storage.types import utcnow
from tests.assistant.support import replies, say, say_in_group
from tests.feishu_world import OWNER, WorldFactory
from tests.owner.support import (
    PUBLIC_URL,
    approve,
    ask_for_link,
    open_callback,
    raw_rows,
    sign_in,
    signin_world,
    stored,
)


async def test_owner_signs_in_and_no_token_is_in_the_database_in_plaintext(
    make_world: WorldFactory,
) -> None:
    async with signin_world(make_world) as w:
        link = await ask_for_link(w)
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)
        assert query["redirect_uri"] == [PUBLIC_URL + "/feishu/oauth/callback"]
        assert "offline_access" in query["scope"][0].split()
        [state] = query["state"]
        callback = await open_callback(w, await approve(w, link))
        assert callback.status == 200
        assert "Signed in. You can close this page." in callback.page
        [code] = urllib.parse.parse_qs(urllib.parse.urlsplit(callback.url).query)["code"]
        assert code not in callback.page and state not in callback.page

        token = await owner_user_token(w.app.services)
        assert w.fake.user_token_valid(token)
        [issued] = [t for t in w.fake.user_tokens.values() if t.access_token == token]
        assert issued.open_id == OWNER and issued.refresh_token
        raw = await raw_rows(w)
        for secret in (token, issued.refresh_token, state):
            assert secret.encode() not in raw, f"{secret[:6]}… is in the database as it is"

        state_now = await sign_in_state(w.app.services)
        assert state_now.signed_in and state_now.expires_at is not None
        await say(w, "/status")
        status = (await replies(w, 2))[-1]
        assert "owner sign-in: signed in" in status and token not in status
        async with w.app.http.get(f"{w.app.url}/status.json") as response:
            page = await response.text()
        [item] = [i for i in json.loads(page)["owner"] if i["name"] == "owner sign-in"]
        assert item["state"].startswith("signed in") and not item["red"]
        assert token not in page and issued.refresh_token not in page


async def test_signout_deletes_the_tokens(make_world: WorldFactory) -> None:
    async with signin_world(make_world) as w:
        assert (await sign_in(w)).status == 200
        await say(w, "/signout")
        assert (await replies(w, 2))[-1] == "Signed out: your Feishu tokens are deleted."
        assert await stored(w) is None
        try:
            await owner_user_token(w.app.services)
            raise AssertionError("a token after sign-out")
        except SignInNeeded as exc:
            assert str(exc).startswith("sign in again:")
        assert not (await sign_in_state(w.app.services)).signed_in


async def test_replayed_state_is_refused_and_stores_nothing(make_world: WorldFactory) -> None:
    async with signin_world(make_world) as w:
        first = await sign_in(w)
        assert first.status == 200
        await say(w, "/signout")
        await replies(w, 2)
        replay = await open_callback(w, first.url)
        assert replay.status == 400 and "already used or has expired" in replay.page
        assert await stored(w) is None


async def test_state_used_with_a_fresh_code_is_still_refused(make_world: WorldFactory) -> None:
    """A state is single use even when the code with it is new and good."""
    async with signin_world(make_world) as w:
        link = await ask_for_link(w)
        assert (await open_callback(w, await approve(w, link))).status == 200
        await say(w, "/signout")
        await replies(w, 2)
        again = await open_callback(w, await approve(w, link))  # the same link, approved anew
        assert again.status == 400
        assert await stored(w) is None


async def test_expired_state_is_refused(make_world: WorldFactory) -> None:
    async with signin_world(make_world) as w:
        callback = await approve(w, await ask_for_link(w))
        async with w.app.services.db.write() as tx:  # ten minutes later
            await tx.execute(update(OwnerSignInState).values(expires_at=utcnow()))
        answer = await open_callback(w, callback)
        assert answer.status == 400 and "expired" in answer.page
        assert await stored(w) is None


async def test_unknown_state_is_refused(make_world: WorldFactory) -> None:
    async with signin_world(make_world) as w:
        callback = await approve(w, await ask_for_link(w))
        forged = callback.replace("state=", "state=forged", 1)
        answer = await open_callback(w, forged)
        assert answer.status == 400
        missing = await open_callback(w, w.app.url + "/feishu/oauth/callback?code=abc")
        assert missing.status == 400 and "not a complete sign-in" in missing.page
        assert await stored(w) is None


async def test_a_state_issued_to_someone_else_is_refused(make_world: WorldFactory) -> None:
    """A state bound to another open_id (MAKA_OWNER changed since) signs no one in."""
    async with signin_world(make_world) as w:
        callback = await approve(w, await ask_for_link(w))
        async with w.app.services.db.write() as tx:
            await tx.execute(update(OwnerSignInState).values(open_id="ou_former_owner"))
        answer = await open_callback(w, callback)
        assert answer.status == 400 and "not the owner's" in answer.page
        assert await stored(w) is None
        assert w.fake.calls("/open-apis/authen/v2/oauth/token") == 0  # the code was not used


async def test_a_code_for_another_user_is_refused(make_world: WorldFactory) -> None:
    async with signin_world(make_world) as w:
        w.fake.approving_user = "ou_someone_else"  # another person approves the owner's link
        answer = await sign_in(w)
        assert answer.status == 400 and "another person's" in answer.page
        assert await stored(w) is None


async def test_a_non_owner_cannot_sign_in(make_world: WorldFactory) -> None:
    async with signin_world(make_world) as w:
        await say(w, "/signin", sender="ou_user")
        await say_in_group(w, "/signin", sender=OWNER)
        answers = await replies(w, 2)
        assert all(a.startswith("not permitted: only the owner can sign in") for a in answers)
        assert await raw_rows(w) == b""  # no state was made for them


async def test_signin_without_a_secret_key_is_refused_in_one_line(
    make_world: WorldFactory,
) -> None:
    async with signin_world(make_world, secret_key=None) as w:
        await say(w, "/signin")
        [answer] = await replies(w, 1)
        assert "\n" not in answer and "MAKA_SECRET_KEY" in answer
        assert await raw_rows(w) == b""

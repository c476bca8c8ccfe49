"""`maka doctor` on the owner's sign-in: off without its settings, not signed in, red when
the stored sign-in cannot be used; never a token."""

from __future__ import annotations

from pathlib import Path

from bot.cli.doctor import check_owner_signin
from bot.config import load_settings
from bot.owner.crypto import Sealer
from storage.db import create_database
from storage.repos import owner_signin
from storage.types import utcnow


async def test_doctor_says_whether_the_owner_is_signed_in(
    tmp_path: Path, database_url: str
) -> None:
    base = {"data_dir": tmp_path, "database_url": database_url}
    off = await check_owner_signin(load_settings(**base))
    assert off.ok and "MAKA_SECRET_KEY" in off.detail

    ready = {
        **base,
        "feishu_app_id": "cli_x",
        "feishu_app_secret": "s",
        "feishu_verification_token": "v",
        "public_url": "https://maka.example.com",
        "owner": "ou_owner",
        "secret_key": "right key",
    }
    none = await check_owner_signin(load_settings(**ready))
    assert none.ok and none.detail.startswith("not signed in")

    db = create_database(database_url)
    try:  # a sign-in sealed with another key (the setting changed since)
        sealed = Sealer("old key").seal({"access_token": "u-secret"}, context=owner_signin.OWNER)
        async with db.write() as tx:
            now = utcnow()
            await owner_signin.put(
                tx, sealed, access_expires_at=now, refresh_expires_at=None, now=now
            )
    finally:
        await db.dispose()
    red = await check_owner_signin(load_settings(**ready))
    assert not red.ok and "sign in again" in red.detail and "u-secret" not in red.detail

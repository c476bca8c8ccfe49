"""Fixtures for the sources tests: a Dovecot IMAP server (session-wide, a user per test), the
Feishu fake, and a sync runner over either."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.channels.api_usage import ApiUsageCounter
from bot.channels.feishu.api import FeishuApi
from bot.sync.adapters import render_feishu
from sources.feishu.history import FeishuHistory
from sources.feishu.transport import Pacer
from storage.db import Database
from tests.fakes import FeishuFake
from tests.feishu_world import fake, make_world  # noqa: F401  (fixtures)
from tests.sources.dovecot import Dovecot, DovecotUnavailable, MailAccount, start_dovecot


@pytest.fixture(scope="session")
def dovecot_server() -> Iterator[Dovecot]:
    """Skips with the reason when Dovecot cannot run here; under CI that is a failure."""
    try:
        server = start_dovecot()
    except DovecotUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"IMAP tests need Dovecot: {exc}")
        pytest.skip(f"IMAP tests need Dovecot: {exc}")
    try:
        yield server
    finally:
        server.stop()
        import shutil

        shutil.rmtree(server.root, ignore_errors=True)


@pytest.fixture
def mail_account(dovecot_server: Dovecot) -> MailAccount:
    return dovecot_server.add_user()


def feishu_api(server: FeishuFake, db: Database, usage: Any = None) -> FeishuApi:
    app_id, app_secret = server.new_app()  # the SDK caches tokens per app_id
    return FeishuApi(
        app_id=app_id,
        app_secret=app_secret,
        domain=server.url,
        usage=usage or ApiUsageCounter(db, "feishu", UTC),
        max_wait=2.0,
    )


@pytest.fixture
async def history(fake: FeishuFake, db: Database) -> AsyncIterator[FeishuHistory]:  # noqa: F811
    """The Feishu history adapter as the service builds it, against the fake, unpaced
    (pacing has its own test)."""
    usage = ApiUsageCounter(db, "feishu", UTC)
    adapter = FeishuHistory(
        feishu_api(fake, db, usage),
        db,
        render=render_feishu,
        pacer=Pacer(4, 0.0),
        on_close=usage.aclose,
    )
    yield adapter
    await adapter.aclose()


LEASE = timedelta(seconds=30)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"

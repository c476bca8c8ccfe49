"""Webhook mode never runs open: a Feishu app needs a verification token or an encrypt key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.config import ConfigError, load_settings
from tests.cli.test_commands import _env, _run

APP = {"feishu_app_id": "cli_a", "feishu_app_secret": "app-secret"}


def test_a_webhook_app_without_token_or_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(data_dir=tmp_path, **APP)
    [line] = refused.value.lines
    assert line.startswith("MAKA_FEISHU_VERIFICATION_TOKEN: webhook mode needs")
    assert "MAKA_FEISHU_ENCRYPT_KEY" in line


@pytest.mark.parametrize(
    "extra",
    [
        {"feishu_verification_token": "t"},
        {"feishu_encrypt_key": "k"},
        {"feishu_mode": "ws"},  # the long connection authenticates with the app secret
    ],
)
def test_a_token_a_key_or_the_long_connection_is_enough(tmp_path: Path, extra: Any) -> None:
    assert load_settings(data_dir=tmp_path, **APP, **extra).feishu_configured


def test_without_an_app_no_token_is_needed(tmp_path: Path) -> None:
    assert not load_settings(data_dir=tmp_path).feishu_configured


async def test_serve_refuses_an_open_webhook_in_one_line(tmp_path: Path) -> None:
    env = _env(
        tmp_path,
        MAKA_FEISHU_APP_ID="cli_a",
        MAKA_FEISHU_APP_SECRET="app-secret",
        MAKA_HTTP_PORT="0",  # were it to start anyway
    )
    code, out, err = await _run(["serve"], env)
    assert code != 0
    lines = [line for line in (out + err).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("MAKA_FEISHU_VERIFICATION_TOKEN: webhook mode needs"), lines

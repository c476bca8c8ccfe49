"""Run the real application on a loopback port for a test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bot.config import Role, Settings, load_settings
from bot.llm.client import ModelProvider
from bot.runtime import SERVICES, Component, create_app
from bot.services import Services


def make_settings(tmp_path: Path, database_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "data_dir": tmp_path / "data",
        "database_url": database_url,
        "http_port": 0,
        "poll_interval": 0.1,
        "shutdown_grace": 5.0,
    }
    values.update(overrides)
    return load_settings(**values)


@dataclass
class RunningApp:
    app: web.Application
    url: str
    http: aiohttp.ClientSession

    @property
    def services(self) -> Services:
        return self.app[SERVICES]


@asynccontextmanager
async def running_app(
    settings: Settings,
    role: Role = Role.ALL,
    extra: list[Component] | None = None,
    *,
    bot: Component | None = None,
    model_provider: ModelProvider | None = None,
) -> AsyncIterator[RunningApp]:
    app = create_app(settings, role, extra, bot=bot, model_provider=model_provider)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with aiohttp.ClientSession() as http:
            yield RunningApp(app, f"http://127.0.0.1:{port}", http)
    finally:
        await runner.cleanup()

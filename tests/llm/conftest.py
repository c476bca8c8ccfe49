from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from bot.llm.openai_compat import OpenAICompatibleProvider
from tests.fakes.openai_server import FakeOpenAIServer

# Fast but realistic: the real retry policy with tiny waits (jitter is capped by max_wait).
FAST: dict[str, Any] = {"timeout": 2.0, "attempts": 3, "initial_wait": 0.01, "max_wait": 0.05}

ProviderFactory = Callable[..., OpenAICompatibleProvider]


@pytest.fixture
async def fake_openai() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
async def make_provider(fake_openai: FakeOpenAIServer) -> AsyncIterator[ProviderFactory]:
    made: list[OpenAICompatibleProvider] = []

    def make(**overrides: Any) -> OpenAICompatibleProvider:
        options = {**FAST, **overrides}
        base_url = options.pop("base_url", fake_openai.base_url)
        api_key = options.pop("api_key", fake_openai.api_key)
        model = options.pop("model", "fake-model")
        provider = OpenAICompatibleProvider(base_url, api_key, model, **options)
        made.append(provider)
        return provider

    yield make
    for provider in made:
        await provider.aclose()

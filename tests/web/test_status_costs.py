"""Model costs on the status page, read over HTTP as an operator reads it: per role today and
over 7 days from MAKA_MODEL_PRICES, the conversations that cost the most, models without a
price named, and the fallback model's use shown red; a real fallback call lands there."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from pathlib import Path

from bot.llm.types import Message
from storage.models import ModelCall
from storage.types import utcnow
from tests.apps import make_settings, running_app
from tests.fakes.openai_server import FakeOpenAIServer, openai_error

PRICES = '{"deepseek-chat": {"input": 0.27, "output": 1.1}, "gpt-4o": {"input": 2.5, "output": 10}}'


def _text(page: str) -> str:
    """The page as a person reads it: tags gone, entities decoded, spaces collapsed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def _call(purpose: str, model: str, i: int, o: int, days_ago: int = 0, **kw: object) -> ModelCall:
    at = utcnow() - timedelta(days=days_ago)
    return ModelCall(purpose=purpose, model=model, input_tokens=i, output_tokens=o,
                     latency_ms=5, created_at=at, **kw)  # fmt: skip


async def test_the_page_shows_costs_per_role_and_the_conversations_that_cost_most(
    tmp_path: Path, database_url: str
) -> None:
    settings = make_settings(
        tmp_path,
        database_url,
        model_prices=PRICES,
        model_fallback_base_url="http://127.0.0.1:9/v1",
        model_fallback_name="backup-model",
        model_base_url="http://127.0.0.1:9/v1",
        model_name="deepseek-chat",
    )
    async with running_app(settings) as app:
        async with app.services.db.write() as s:
            s.add_all([
                _call("bot_turn", "deepseek-chat", 1_000_000, 0, conversation_id=101),
                _call("bot_turn", "deepseek-chat", 0, 1_000, conversation_id=101,
                      fallback=True),
                _call("matter_turn", "gpt-4o-2024-08-06", 100_000, 10_000),
                _call("index_turn", "local-llama", 4_000, 1_000),
                _call("discovery_turn", "deepseek-chat", 1_000_000, 0, usage_estimated=True),
                _call("bot_turn", "deepseek-chat", 2_000_000, 1_000_000, days_ago=3,
                      conversation_id=102),
                _call("bot_turn", "deepseek-chat", 9_000_000, 0, days_ago=10,
                      conversation_id=103),
            ])  # fmt: skip
        async with app.http.get(f"{app.url}/status") as resp:
            assert resp.status == 200
            page = _text(await resp.text())
        async with app.http.get(f"{app.url}/status.json") as resp:
            data = await resp.json()
    costs = page[page.index("Model costs") : page.index("Feishu API")]
    assert "Bot 0.2711 USD today 1.91 USD in 7 days, 3 calls" in costs
    assert "task agents 0.3500 USD today 0.3500 USD in 7 days, 1 call" in costs  # gpt-4o-*
    assert "indexers 0.0000 USD today" in costs
    # an endpoint that reported no usage: priced from the tokenizer's estimate, and said so
    assert "discovery 0.2700 USD (est.) today 0.2700 USD (est.) in 7 days" in costs
    assert "no price for local-llama (5000 tokens)" in costs
    assert "fallback model used 1 time today backup-model" in costs
    assert "What to do: the primary model failed and the fallback answered" in costs
    top = page[page.index("Top conversations by cost") : page.index("Feishu API")]
    assert top.index("conversation 102 1.64 USD") < top.index("conversation 101 0.2711 USD")
    assert "conversation 103" not in top  # 10 days ago
    assert [i["name"] for i in data["costs"] if i["red"]] == ["fallback model"]


async def test_without_prices_the_page_says_how_to_set_them(
    tmp_path: Path, database_url: str
) -> None:
    async with running_app(make_settings(tmp_path, database_url)) as app:
        async with app.services.db.write() as s:
            s.add(_call("session_summary", "qwen-turbo", 300, 20))
        async with app.http.get(f"{app.url}/status") as resp:
            page = _text(await resp.text())
    assert "prices not set" in page and "MAKA_MODEL_PRICES" in page
    assert "summaries 0.0000 USD today" in page and "no price for qwen-turbo (320 tokens)" in page
    assert "fallback model not set" in page


async def test_a_call_the_fallback_answered_is_shown_on_the_status_page(
    tmp_path: Path, database_url: str
) -> None:
    async with (
        FakeOpenAIServer() as primary,
        FakeOpenAIServer(api_key="key-backup") as backup,
    ):
        primary.fail_next(404, body=openai_error("no such model", code="model_not_found"))
        backup.reply_text("answered", prompt_tokens=1_000_000, completion_tokens=0)
        settings = make_settings(
            tmp_path,
            database_url,
            model_base_url=primary.base_url,
            model_api_key=primary.api_key,
            model_name="gone-model",
            model_fallback_base_url=backup.base_url,
            model_fallback_api_key="key-backup",
            model_fallback_name="deepseek-chat",
            model_prices=PRICES,
        )
        async with running_app(settings) as app:
            model = app.services.model
            assert model is not None
            completion = await model.complete([Message.user("hi")], purpose="bot_turn")
            assert completion.text == "answered"
            async with app.http.get(f"{app.url}/status") as resp:
                page = _text(await resp.text())
    assert "fallback model used 1 time today deepseek-chat" in page
    assert "Bot 0.2700 USD today 0.2700 USD in 7 days, 2 calls" in page


async def test_costs_are_shown_only_to_whoever_may_see_the_status_page(
    tmp_path: Path, database_url: str
) -> None:
    settings = make_settings(tmp_path, database_url, admin_token="open-sesame-4711",
                             model_prices=PRICES)  # fmt: skip
    async with running_app(settings) as app:
        async with app.services.db.write() as s:
            s.add(_call("bot_turn", "deepseek-chat", 1_000_000, 0, conversation_id=101))
        for path in ("/status", "/status.json"):
            async with app.http.get(f"{app.url}{path}") as resp:
                assert resp.status == 401
                refused = await resp.text()
            assert "0.2700" not in refused and "conversation 101" not in refused
        bearer = {"Authorization": "Bearer open-sesame-4711"}
        async with app.http.get(f"{app.url}/status", headers=bearer) as resp:
            assert resp.status == 200
            assert "conversation 101 0.2700 USD" in _text(await resp.text())

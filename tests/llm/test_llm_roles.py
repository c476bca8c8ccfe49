"""Per-role models: MAKA_MODEL_<ROLE>_* part by part over the main model, one client per
distinct endpoint and model, each role's calls answered at its own endpoint (two loopback
OpenAI fakes), and the price settings checked at start."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from bot.cli.doctor import check_model_roles
from bot.config import ConfigError, load_settings
from bot.discovery.component import round_runner
from bot.llm import MemoryRecorder, Message
from bot.llm.factory import build_roster
from bot.llm.roles import OWN_MODEL_ROLES, PURPOSES, ModelRole
from bot.memory.indexes.maintenance import IndexMaintenanceWorker
from bot.workhub.summaries import SummaryWorker
from tests.apps import make_settings, running_app
from tests.fakes.openai_server import FakeOpenAIServer

MAIN = {"model_base_url": "https://api.deepseek.com/v1", "model_name": "deepseek-chat",
        "model_api_key": "sk-main"}  # fmt: skip


def test_a_role_without_settings_of_its_own_is_the_main_model() -> None:
    settings = load_settings(**MAIN)
    main = settings.main_endpoint
    assert main is not None and main.api_key == "sk-main"
    assert all(settings.role_endpoint(role) == main for role in OWN_MODEL_ROLES)
    assert settings.fallback_endpoint is None


def test_a_role_takes_each_unset_part_from_the_main_model() -> None:
    settings = load_settings(**MAIN, model_summary_name="deepseek-lite")
    summary = settings.role_endpoint(ModelRole.SUMMARY)
    assert summary is not None
    assert (summary.base_url, summary.api_key, summary.name) == (
        "https://api.deepseek.com/v1", "sk-main", "deepseek-lite"
    )  # fmt: skip


def test_a_role_at_another_endpoint_never_gets_the_main_models_key() -> None:
    settings = load_settings(
        **MAIN,
        model_indexer_base_url="http://127.0.0.1:11434/v1/",
        model_reviewer_base_url="https://dashscope.aliyuncs.com/compatible-mode/v1",
        model_reviewer_api_key="sk-qwen",
        model_reviewer_name="qwen-plus",
    )
    indexer = settings.role_endpoint(ModelRole.INDEXER)
    reviewer = settings.role_endpoint(ModelRole.REVIEWER)
    assert indexer is not None and reviewer is not None
    assert (indexer.base_url, indexer.api_key, indexer.name) == (
        "http://127.0.0.1:11434/v1", None, "deepseek-chat"
    )  # fmt: skip
    assert (reviewer.api_key, reviewer.name) == ("sk-qwen", "qwen-plus")


def test_a_fallback_model_at_the_same_endpoint_needs_only_its_name() -> None:
    settings = load_settings(**MAIN, model_fallback_name="deepseek-reasoner")
    fallback = settings.fallback_endpoint
    assert fallback is not None
    assert (fallback.base_url, fallback.api_key, fallback.name) == (
        "https://api.deepseek.com/v1", "sk-main", "deepseek-reasoner"
    )  # fmt: skip


def test_a_role_model_with_no_url_anywhere_is_one_line_naming_both_variables() -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(model_summary_name="qwen-turbo")
    assert caught.value.lines == [
        "MAKA_MODEL_SUMMARY_NAME: needs a URL (MAKA_MODEL_SUMMARY_BASE_URL or "
        "MAKA_MODEL_BASE_URL) and a model (MAKA_MODEL_SUMMARY_NAME or MAKA_MODEL_NAME)"
    ]


def test_a_role_url_that_is_no_url_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(**MAIN, model_router_base_url="api.example.com")
    [line] = caught.value.lines
    assert line.startswith("MAKA_MODEL_ROUTER_BASE_URL: expected an http:// or https:// URL")


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ('{"deepseek-chat": 0.27', "MAKA_MODEL_PRICES: not valid JSON"),
        ('[["deepseek-chat", 0.27]]', "MAKA_MODEL_PRICES: a JSON object of model names"),
        ('{"deepseek-chat": {"input": "cheap", "output": 1.1}}',
         "MAKA_MODEL_PRICES: deepseek-chat.input: Input should be a valid number"),
        ('{"deepseek-chat": {"input": 0.27}}', "MAKA_MODEL_PRICES: deepseek-chat.output: Field"),
        ('{"deepseek-chat": {"input": -1, "output": 1}}',
         "MAKA_MODEL_PRICES: deepseek-chat.input: Input should be greater than or equal to 0"),
    ],
)  # fmt: skip
def test_a_broken_price_list_stops_start_up_with_one_line_naming_what_is_wrong(
    value: str, says: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(model_prices=value)
    [line] = caught.value.lines
    assert line.startswith(says), line


def test_a_price_applies_to_the_versions_its_name_begins() -> None:
    settings = load_settings(
        model_prices='{"gpt-4o": {"input": 2.5, "output": 10}, '
        '"gpt-4o-mini": {"input": 0.15, "output": 0.6}}',
        model_price_currency="cny",
    )
    assert settings.price_of("gpt-4o-2024-08-06") == settings.model_prices["gpt-4o"]
    assert settings.price_of("gpt-4o-mini-2024-07-18") == settings.model_prices["gpt-4o-mini"]
    assert settings.price_of("deepseek-chat") is None
    assert settings.model_prices["gpt-4o"].cost(1_000_000, 100_000) == pytest.approx(3.5)
    assert settings.model_price_currency == "CNY"


def test_every_purpose_recorded_belongs_to_a_role_with_settings() -> None:
    roles = {purpose.role for purpose in PURPOSES.values()}
    assert roles == {ModelRole.MAIN, *OWN_MODEL_ROLES}


async def test_each_role_is_answered_at_its_own_endpoint_by_one_client_per_model() -> None:
    async with (
        FakeOpenAIServer(api_key="key-main") as main,
        FakeOpenAIServer(api_key="key-cheap") as cheap,
    ):
        settings = load_settings(
            model_base_url=main.base_url,
            model_api_key="key-main",
            model_name="big-model",
            model_summary_base_url=cheap.base_url,
            model_summary_api_key="key-cheap",
            model_summary_name="small-model",
            model_indexer_base_url=cheap.base_url,
            model_indexer_api_key="key-cheap",
            model_indexer_name="small-model",
            model_reviewer_name="careful-model",
        )
        recorder = MemoryRecorder()
        roster = build_roster(settings, recorder)
        try:
            clients = roster.clients
            assert clients[ModelRole.SUMMARY] is clients[ModelRole.INDEXER]
            assert clients[ModelRole.DISCOVERY] is clients[ModelRole.MAIN]
            assert clients[ModelRole.ROUTER] is clients[ModelRole.MAIN]
            assert len({id(c) for c in clients.values()}) == 3 == len(roster.providers)
            for role in ModelRole:
                client = clients[role]
                assert client is not None
                await client.complete([Message.user(f"hello {role}")], purpose=str(role))
        finally:
            await roster.aclose()
    asked_main = {r["model"] for r in main.requests}
    asked_cheap = {r["model"] for r in cheap.requests}
    assert asked_main == {"big-model", "careful-model"} and len(main.requests) == 4
    assert asked_cheap == {"small-model"} and len(cheap.requests) == 2
    assert {c.purpose: c.model for c in recorder.calls}["summary"] == "small-model"


async def test_the_running_service_hands_each_component_its_roles_model(
    tmp_path: Path, database_url: str
) -> None:
    with socket.socket() as s:  # nothing is asked: only which client each role holds
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    settings = make_settings(
        tmp_path,
        database_url,
        model_base_url=url,
        model_name="big-model",
        model_discovery_name="explorer-model",
        model_indexer_name="indexer-model",
        model_summary_name="summary-model",
        model_router_name="router-model",
        workhub_recall="model",
    )
    async with running_app(settings) as app:
        services = app.services
        assert services.model is not None and services.model.model == "big-model"
        assert services.model_for(ModelRole.REVIEWER) is services.model
        workers = {name: state.worker for name, state in services.host.status().items()}
        held = {
            "summaries": next(w for w in workers.values() if isinstance(w, SummaryWorker)).model,
            "indexers": next(
                w for w in workers.values() if isinstance(w, IndexMaintenanceWorker)
            ).turn.model,
            "discovery": round_runner(services).discovery.loop.model,
            "judgement": round_runner(services).judgement.loop.model,
        }
        router = services.workhub.recaller.model_router
        assert router is not None
        held["router"] = router.model
    assert {who: client.model for who, client in held.items()} == {
        "summaries": "summary-model",
        "indexers": "indexer-model",
        "discovery": "explorer-model",
        "judgement": "explorer-model",
        "router": "router-model",
    }


async def test_doctor_names_each_roles_model_in_one_line() -> None:
    settings = load_settings(
        **MAIN,
        model_summary_name="deepseek-lite",
        model_indexer_base_url="http://127.0.0.1:11434/v1",
        model_indexer_name="qwen2.5",
        model_fallback_base_url="https://api.moonshot.cn/v1",
        model_fallback_api_key="sk-kimi",
        model_fallback_name="moonshot-v1-8k",
    )
    check = await check_model_roles(settings)
    assert check.ok
    assert check.line() == (
        "ok    model-roles: summary=deepseek-lite, indexer=qwen2.5 at "
        "http://127.0.0.1:11434/v1, discovery=main, reviewer=main, router=main, "
        "fallback=moonshot-v1-8k at https://api.moonshot.cn/v1"
    )
    assert "sk-" not in check.line()
    unset = await check_model_roles(load_settings())
    assert unset.detail.startswith("none; MAKA_MODEL_<ROLE>_*")

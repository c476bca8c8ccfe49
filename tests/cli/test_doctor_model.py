"""`maka doctor`'s real questions to the model endpoint: does it answer, call tools, stream,
and what context window it reports; a model that cannot call tools is named in one line."""

from __future__ import annotations

from pathlib import Path

from bot.cli.doctor import Check, check_model
from bot.config import load_settings
from tests.cli.test_commands import _env, _run
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.provider_standins import ProviderStandIn

NEEDS_TOOLS = "the Bot needs tool calls; choose a model that supports them"


async def _doctor(server: FakeOpenAIServer, tmp_path: Path, model: str) -> dict[str, Check]:
    settings = load_settings(
        data_dir=tmp_path / "data",
        model_base_url=server.base_url,
        model_api_key=server.api_key,
        model_name=model,
    )
    return {check.name: check for check in await check_model(settings)}


async def test_a_model_that_calls_the_tool_is_said_to_call_tools(tmp_path: Path) -> None:
    async with ProviderStandIn() as server:
        server.reply_tool_calls([("report_ready", {"ready": True})])
        found = await _doctor(server, tmp_path, "fake-model")
        probe = next(r for r in server.requests if r.get("tools"))
    assert found["model-answers"].ok, found["model-answers"]
    assert found["model-tools"].ok and "calls tools" in found["model-tools"].detail
    assert [t["function"]["name"] for t in probe["tools"]] == ["report_ready"]


async def test_ollamas_refusal_of_tools_names_the_model_in_one_line(tmp_path: Path) -> None:
    async with ProviderStandIn(refuse_tools=True, models=["gemma3:4b"]) as server:
        found = await _doctor(server, tmp_path, "gemma3:4b")
    assert found["model-answers"].ok  # it answered: with a refusal
    tools = found["model-tools"]
    assert not tools.ok
    assert "gemma3:4b" in tools.detail and "does not support tools" in tools.detail
    assert tools.detail.endswith(NEEDS_TOOLS) and "\n" not in tools.detail


async def test_a_server_that_ignores_tools_and_answers_text_is_named(tmp_path: Path) -> None:
    async with ProviderStandIn() as server:  # nothing queued: it answers "ok", no call
        found = await _doctor(server, tmp_path, "fake-model")
    assert not found["model-tools"].ok
    assert found["model-tools"].detail == (
        f"model fake-model answered without calling the tool: {NEEDS_TOOLS}"
    )


async def test_a_streaming_endpoint_is_said_to_stream_and_another_not(tmp_path: Path) -> None:
    async with ProviderStandIn(streams=True) as server:
        streaming = (await _doctor(server, tmp_path, "fake-model"))["model-streaming"]
    async with ProviderStandIn() as server:  # refuses stream requests with a 400
        whole = (await _doctor(server, tmp_path, "fake-model"))["model-streaming"]
    assert streaming.ok and streaming.detail.startswith("streams"), streaming
    assert whole.ok and whole.detail.startswith("does not stream"), whole  # no failure


async def test_the_context_window_the_endpoint_reports_is_printed(tmp_path: Path) -> None:
    async with ProviderStandIn(model_fields={"context_length": 131072}) as server:
        listed = (await _doctor(server, tmp_path, "fake-model"))["model-context"]
    async with ProviderStandIn(ollama_context=8192, models=["gemma3:4b"]) as server:
        ollama = (await _doctor(server, tmp_path, "gemma3:4b"))["model-context"]
    async with ProviderStandIn() as server:
        silent = (await _doctor(server, tmp_path, "fake-model"))["model-context"]
    assert listed.detail == "131072 tokens (GET /models context_length)"
    assert ollama.detail == "8192 tokens (Ollama /api/show gemma3.context_length)"
    assert silent.detail == "not reported by the endpoint"


async def test_doctor_fails_and_prints_the_line_for_a_model_without_tools(
    tmp_path: Path,
) -> None:
    async with ProviderStandIn(refuse_tools=True, models=["gemma3:4b"]) as server:
        env = _env(
            tmp_path,
            MAKA_MODEL_BASE_URL=server.base_url,
            MAKA_MODEL_API_KEY=server.api_key,
            MAKA_MODEL_NAME="gemma3:4b",
        )
        code, out, _ = await _run(["doctor"], env)
    assert code == 1, out
    lines = [line for line in out.splitlines() if "model-tools:" in line]
    assert len(lines) == 1 and lines[0].startswith("FAIL"), out
    assert "model gemma3:4b refused tools" in lines[0] and NEEDS_TOOLS in lines[0]


async def test_an_azure_deployment_is_probed_with_its_api_version(tmp_path: Path) -> None:
    """Azure answers nothing without `api-version` (a 404): the probe's stream request carries
    it as `complete` does, so a streaming deployment is said to stream."""
    async with FakeOpenAIServer(azure_deployment="gpt-4o-prod", streams=True) as server:
        for _ in range(2):  # a deployment lists no /models: the listing check pings it first
            server.reply_tool_calls([("report_ready", {"ready": True})])
        found = await _doctor(server, tmp_path, "gpt-4o-prod")
        streamed = [r for r in server.requests if isinstance(r, dict) and r.get("stream")]
    assert found["model-tools"].ok, found["model-tools"]
    assert found["model-streaming"].detail.startswith("streams"), found["model-streaming"]
    assert streamed, "the probe asked for no stream"

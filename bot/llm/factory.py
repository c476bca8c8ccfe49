"""Build the project's `ModelClient` from settings, or None when no model is configured."""

from __future__ import annotations

from typing import Literal

from bot.llm.client import CallRecorder, ModelClient

# Local OpenAI-compatible servers (Ollama, vLLM, llama.cpp) need no key, but the SDK refuses to
# start without one.
NO_API_KEY = "not-needed"


def build_model_client(
    base_url: str | None,
    api_key: str | None,
    model: str | None,
    recorder: CallRecorder,
    *,
    timeout: float = 60.0,
    stream: Literal["auto", "on", "off"] = "off",
    api_version: str | None = None,
) -> ModelClient | None:
    """None unless both `base_url` and `model` are set (the app then answers "no model
    configured"). A missing `api_key` is allowed for local servers."""
    base_url = (base_url or "").strip()
    model = (model or "").strip()
    if not base_url or not model:
        return None
    # Imported here: the openai SDK is ~20 MB resident, and a process without a model (the
    # embedded defaults) never needs it.
    from bot.llm.openai_compat import OpenAICompatibleProvider

    provider = OpenAICompatibleProvider(
        base_url,
        (api_key or "").strip() or NO_API_KEY,
        model,
        timeout=timeout,
        stream=stream,
        api_version=api_version,
    )
    return ModelClient(provider, recorder)

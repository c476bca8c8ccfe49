"""Build the project's model clients from settings: `build_model_client` for one endpoint,
`build_roster` for every role (one client per distinct endpoint and model, built once)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from bot.llm.client import CallRecorder, ModelClient, ModelProvider
from bot.llm.roles import OWN_MODEL_ROLES, ModelRole
from bot.llm.settings import Endpoint, ModelSettings

# Local OpenAI-compatible servers (Ollama, vLLM, llama.cpp) need no key, but the SDK refuses to
# start without one.
NO_API_KEY = "not-needed"


def build_provider(
    endpoint: Endpoint,
    *,
    timeout: float = 60.0,
    stream: Literal["auto", "on", "off"] = "off",
    api_version: str | None = None,
) -> ModelProvider:
    # Imported here: a process without a model (the embedded defaults) never needs it.
    from bot.llm.openai_compat import OpenAICompatibleProvider

    return OpenAICompatibleProvider(
        endpoint.base_url,
        endpoint.api_key or NO_API_KEY,
        endpoint.name,
        timeout=timeout,
        stream=stream,
        api_version=api_version,
    )


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
    endpoint = Endpoint(base_url, (api_key or "").strip() or None, model)
    provider = build_provider(endpoint, timeout=timeout, stream=stream, api_version=api_version)
    return ModelClient(provider, recorder)


@dataclass
class ModelRoster:
    """The model client of each role (None: no model for it). Clients for the same endpoint
    and model are one client; `aclose` closes each provider once."""

    clients: dict[ModelRole, ModelClient | None]
    endpoints: dict[ModelRole, Endpoint | None] = field(default_factory=dict)
    fallback: Endpoint | None = None
    providers: list[ModelProvider] = field(default_factory=list)

    @property
    def main(self) -> ModelClient | None:
        return self.clients.get(ModelRole.MAIN)

    @property
    def by_role(self) -> Mapping[ModelRole, ModelClient | None]:
        return self.clients

    @classmethod
    def single(cls, client: ModelClient | None) -> ModelRoster:
        """Every role answered by one client (tests hand the app one scripted provider)."""
        return cls(dict.fromkeys(ModelRole, client), providers=[client.provider] if client else [])

    async def aclose(self) -> None:
        for provider in self.providers:
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()


def build_roster(settings: ModelSettings, recorder: CallRecorder) -> ModelRoster:
    providers: dict[Endpoint, ModelProvider] = {}

    def provider_for(endpoint: Endpoint) -> ModelProvider:
        if endpoint not in providers:
            providers[endpoint] = build_provider(
                endpoint,
                timeout=settings.model_timeout,
                stream=settings.model_stream.value,
                api_version=settings.model_api_version,
            )
        return providers[endpoint]

    fallback = settings.fallback_endpoint
    clients: dict[Endpoint, ModelClient] = {}
    roster = ModelRoster({}, fallback=fallback)
    for role in (ModelRole.MAIN, *OWN_MODEL_ROLES):
        endpoint = settings.role_endpoint(role)
        roster.endpoints[role] = endpoint
        if endpoint is None:
            roster.clients[role] = None
            continue
        if endpoint not in clients:
            spare = provider_for(fallback) if fallback and fallback != endpoint else None
            clients[endpoint] = ModelClient(provider_for(endpoint), recorder, fallback=spare)
        roster.clients[role] = clients[endpoint]
    roster.providers = list(providers.values())
    return roster

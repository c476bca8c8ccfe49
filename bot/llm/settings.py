"""The model settings (`MAKA_MODEL_*`): the main model, a model per role, a fallback model,
and prices. A part of `bot.config.Settings` (which inherits them), kept here so that the
model's knobs read together.

A role's or the fallback's unset parts are the main model's, except the API key: a role at
an endpoint of its own never gets the main model's key (it would go to another server)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode

from bot.llm.roles import OWN_MODEL_ROLES, ModelRole

PRICES_EXAMPLE = '{"deepseek-chat": {"input": 0.27, "output": 1.1}}'


class ModelStream(StrEnum):
    AUTO = "auto"  # stream; once the endpoint says it cannot, ask without (per process)
    ON = "on"
    OFF = "off"


class ModelPrice(BaseModel):
    """What a model costs per million tokens, in MAKA_MODEL_PRICE_CURRENCY."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input + output_tokens * self.output) / 1_000_000


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One model at one endpoint: what a `ModelClient` is built for."""

    base_url: str
    api_key: str | None
    name: str

    def describe(self) -> str:
        return f"{self.name} at {self.base_url}"


def _http_url(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    if not value.startswith(("http://", "https://")):
        raise ValueError(f"expected an http:// or https:// URL, got {value!r}")
    return value.rstrip("/")


def _text(value: str | None) -> str | None:
    return (value or "").strip() or None


def _secret(value: SecretStr | None) -> str | None:
    return (value.get_secret_value().strip() or None) if value is not None else None


class ModelSettings(BaseSettings):
    model_base_url: str | None = None
    model_api_key: SecretStr | None = None
    model_name: str | None = None
    model_timeout: float = Field(default=60.0, gt=0)
    # Streamed answers (SSE) let the progress card show the model writing.
    model_stream: ModelStream = ModelStream.AUTO
    # Azure OpenAI's `api-version` (a default is used for *.openai.azure.com and
    # /openai/deployments/ URLs); any other endpoint gets it as a query parameter if set.
    model_api_version: str | None = None

    # A model per role; each unset part is the main model's (see the module's docstring).
    model_summary_base_url: str | None = None
    model_summary_api_key: SecretStr | None = None
    model_summary_name: str | None = None
    model_indexer_base_url: str | None = None
    model_indexer_api_key: SecretStr | None = None
    model_indexer_name: str | None = None
    model_discovery_base_url: str | None = None
    model_discovery_api_key: SecretStr | None = None
    model_discovery_name: str | None = None
    model_reviewer_base_url: str | None = None
    model_reviewer_api_key: SecretStr | None = None
    model_reviewer_name: str | None = None
    model_router_base_url: str | None = None
    model_router_api_key: SecretStr | None = None
    model_router_name: str | None = None
    # Asked once, with the same request, when a model stays unavailable after its retries.
    model_fallback_base_url: str | None = None
    model_fallback_api_key: SecretStr | None = None
    model_fallback_name: str | None = None

    # Per million tokens, by model name (a recorded name the price's name begins counts too:
    # "gpt-4o" prices "gpt-4o-2024-08-06").
    model_prices: Annotated[dict[str, ModelPrice], NoDecode] = Field(default_factory=dict)
    model_price_currency: str = Field(default="USD", min_length=1, max_length=8)

    @field_validator(
        "model_base_url",
        "model_summary_base_url",
        "model_indexer_base_url",
        "model_discovery_base_url",
        "model_reviewer_base_url",
        "model_router_base_url",
        "model_fallback_base_url",
    )
    @classmethod
    def _model_url(cls, value: str | None) -> str | None:
        return _http_url(value)

    @field_validator("model_prices", mode="before")
    @classmethod
    def _prices_json(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if not value.strip():
            return {}
        try:
            parsed = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"not valid JSON ({exc}); write e.g. {PRICES_EXAMPLE}") from None
        if not isinstance(parsed, dict):
            raise ValueError(f"a JSON object of model names; write e.g. {PRICES_EXAMPLE}")
        return parsed

    @field_validator("model_price_currency")
    @classmethod
    def _currency(cls, value: str) -> str:
        return value.strip().upper() or "USD"

    # --- derived: one place decides which endpoint answers each role ----------------------
    @property
    def main_endpoint(self) -> Endpoint | None:
        url, name = _text(self.model_base_url), _text(self.model_name)
        if not url or not name:
            return None
        return Endpoint(url, _secret(self.model_api_key), name)

    def role_endpoint(self, role: ModelRole) -> Endpoint | None:
        """The endpoint that answers a role's calls: its own parts, the main model's for the
        rest. None when neither names a URL and a model."""
        if role is ModelRole.MAIN:
            return self.main_endpoint
        return self._derived(role.value)

    @property
    def fallback_endpoint(self) -> Endpoint | None:
        if not (_text(self.model_fallback_base_url) or _text(self.model_fallback_name)):
            return None
        return self._derived("fallback")

    def _derived(self, prefix: str) -> Endpoint | None:
        own_url = _text(getattr(self, f"model_{prefix}_base_url"))
        main_url = _text(self.model_base_url)
        url = own_url or main_url
        name = _text(getattr(self, f"model_{prefix}_name")) or _text(self.model_name)
        if not url or not name:
            return None
        key = _secret(getattr(self, f"model_{prefix}_api_key"))
        if key is None and url == main_url:
            key = _secret(self.model_api_key)
        return Endpoint(url, key, name)

    def price_of(self, model: str) -> ModelPrice | None:
        """The price of a recorded model name: its own, else the longest priced name it
        begins with."""
        if model in self.model_prices:
            return self.model_prices[model]
        starts = [name for name in self.model_prices if model.startswith(name)]
        return self.model_prices[max(starts, key=len)] if starts else None

    def model_problems(self) -> list[str]:
        """Problems that involve more than one model variable."""
        problems = []
        if bool(self.model_base_url) != bool(_text(self.model_name)):
            problems.append("MAKA_MODEL_NAME: MAKA_MODEL_BASE_URL and MAKA_MODEL_NAME go together")
        for prefix in [r.value for r in OWN_MODEL_ROLES] + ["fallback"]:
            own = [getattr(self, f"model_{prefix}_{part}") for part in ("base_url", "name")]
            if any(own) and self._derived(prefix) is None:
                upper = prefix.upper()
                problems.append(
                    f"MAKA_MODEL_{upper}_NAME: needs a URL (MAKA_MODEL_{upper}_BASE_URL or "
                    f"MAKA_MODEL_BASE_URL) and a model (MAKA_MODEL_{upper}_NAME or MAKA_MODEL_NAME)"
                )
        return problems

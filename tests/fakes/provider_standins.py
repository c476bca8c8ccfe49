"""Provider stand-ins on the loopback OpenAI fake, for what `maka doctor` asks an endpoint.

    async with ProviderStandIn(refuse_tools=True, ollama_context=8192) as server: ...

- `refuse_tools`: a chat request carrying `tools` gets Ollama's documented answer for a model
  whose template declares none: HTTP 400,
  `{"error":{"message":"<model> does not support tools","type":"api_error",...}}`
  (https://github.com/ollama/ollama/issues/6027).
- A server that ignores tools and answers text needs nothing: the fake answers "ok".
- `streams`: `stream: true` is answered as OpenAI documents it, `data: <chunk JSON>` events
  then `data: [DONE]` (https://platform.openai.com/docs/api-reference/chat-streaming);
  without it the fake refuses a stream request (HTTP 400), as a server that cannot stream.
- `model_fields`: more fields in each `GET /v1/models` entry, e.g. OpenRouter's
  `context_length` (https://openrouter.ai/docs/api-reference/list-available-models).
- `ollama_context`: Ollama's `POST /api/show`, its `model_info` carrying
  `<architecture>.context_length` (https://github.com/ollama/ollama/blob/main/docs/api.md).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest, openai_error


def refuses_tools(body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """Ollama's answer to a request with tools for a model whose template declares none."""
    if not body.get("tools"):
        return None
    return 400, openai_error(f"{body.get('model')} does not support tools", "api_error")


class ProviderStandIn(FakeOpenAIServer):
    def __init__(
        self,
        *,
        refuse_tools: bool = False,
        streams: bool = False,
        model_fields: dict[str, Any] | None = None,
        ollama_context: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(streams=streams, **kwargs)
        self.extra_check = refuses_tools if refuse_tools else None
        self.model_fields = dict(model_fields or {})
        self.ollama_context = ollama_context

    def add_routes(self, app: web.Application) -> None:
        if self.ollama_context is not None:
            app.router.add_post("/api/show", self._show)

    async def _models(self, request: web.Request) -> web.Response:
        if not self.model_fields:
            return await super()._models(request)
        self.log.append(RecordedRequest(request.method, request.path, dict(request.headers), None))
        if (denied := self._unauthorized(request)) is not None:
            return denied
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": "fake", **self.model_fields}
            for m in self.models
        ]
        return web.json_response({"object": "list", "data": data})

    async def _show(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.log.append(RecordedRequest(request.method, request.path, dict(request.headers), body))
        if body.get("model") not in self.models:
            return web.json_response(
                {"error": f"model '{body.get('model')}' not found"}, status=404
            )
        return web.json_response(
            {
                "details": {"family": "gemma3", "format": "gguf"},
                "model_info": {
                    "general.architecture": "gemma3",
                    "gemma3.context_length": self.ollama_context,
                },
                "capabilities": ["completion"],
            }
        )

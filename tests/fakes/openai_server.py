"""A loopback OpenAI-compatible server for tests (a real aiohttp server on 127.0.0.1).

    async with FakeOpenAIServer() as server:
        server.reply_text("hello", prompt_tokens=12, completion_tokens=3)
        server.fail_next(429, times=1, headers={"retry-after": "0"})
        provider = OpenAICompatibleProvider(server.base_url, server.api_key, "fake-model")

Endpoints: `POST /v1/chat/completions` and `GET /v1/models`. Both check
`Authorization: Bearer <api_key>`; with `azure_deployment` the chat endpoint is Azure's
`POST /openai/deployments/{deployment}/chat/completions?api-version=...` checking the
`api-key` header. `stream: true` is answered as server-sent chunks cut from the queued reply
(`streams=False`: a 400 saying the server does not stream).
Each chat request first consumes the next injected fault
(`fail_next`, `delay_next`, in the order they were added), then the next queued reply
(`reply_text`, `reply_tool_calls`, `reply_raw`); with nothing queued it answers "ok".
Every request is recorded; `requests` holds the JSON bodies of the chat requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from aiohttp import web


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class _Failure:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None


@dataclass
class _Delay:
    seconds: float


def openai_error(
    message: str, type_: str = "invalid_request_error", code: str | None = None
) -> Any:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


class FakeOpenAIServer:
    def __init__(
        self,
        *,
        api_key: str = "test-key",
        models: list[str] | None = None,
        models_endpoint: bool = True,
        streams: bool = True,
        azure_deployment: str | None = None,
    ) -> None:
        self.api_key = api_key
        self.streams = streams
        self.azure_deployment = azure_deployment
        # Checks a family's stand-in adds to every chat request: an error (status, body) or None.
        self.extra_check: Callable[[Any], tuple[int, Any] | None] | None = None
        self.models = list(models) if models is not None else ["fake-model"]
        self.models_endpoint = models_endpoint
        self.log: list[RecordedRequest] = []
        self._faults: deque[_Failure | _Delay] = deque()
        self._replies: deque[dict[str, Any]] = deque()
        self._ids = itertools.count(1)
        self._closing = asyncio.Event()
        self._together = 0  # hold_until_together: requests held until this many are in
        self._held = 0
        self._all_in = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    # --- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/openai/deployments/{deployment}/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        self.add_routes(app)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self._port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()

    def add_routes(self, app: web.Application) -> None:
        """A stand-in's own endpoints beside the OpenAI ones (tests/fakes/provider_standins.py)."""

    async def close(self) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeOpenAIServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def base_url(self) -> str:
        assert self._port is not None, "server not started"
        if self.azure_deployment:
            return f"http://127.0.0.1:{self._port}/openai/deployments/{self.azure_deployment}"
        return f"http://127.0.0.1:{self._port}/v1"

    # --- scripting -----------------------------------------------------------------------
    def fail_next(
        self,
        status: int,
        times: int = 1,
        headers: dict[str, str] | None = None,
        body: Any = None,
    ) -> None:
        """The next `times` chat requests answer `status` (body defaults to an OpenAI error)."""
        if body is None:
            body = openai_error(f"injected failure {status}", "server_error")
        for _ in range(times):
            self._faults.append(_Failure(status, dict(headers or {}), body))

    def delay_next(self, seconds: float, times: int = 1) -> None:
        """The next `times` chat requests wait `seconds` before answering normally."""
        for _ in range(times):
            self._faults.append(_Delay(seconds))

    def hold_until_together(self, n: int) -> None:
        """Hold every chat request until `n` are held at once, then answer them all: shows
        whether a client can have `n` requests in flight (or the server closes)."""
        self._together, self._held = n, 0
        self._all_in.clear()

    def reply_raw(self, body: dict[str, Any]) -> None:
        """Queue an exact response body (to test odd shapes, e.g. no `usage`)."""
        self._replies.append(body)

    def reply_text(
        self,
        text: str | None,
        *,
        prompt_tokens: int = 10,
        completion_tokens: int = 5,
        model: str | None = None,
        finish_reason: str = "stop",
    ) -> None:
        self._replies.append(
            self.completion_body(
                {"role": "assistant", "content": text, "refusal": None},
                finish_reason=finish_reason,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                model=model,
            )
        )

    def reply_tool_calls(
        self,
        calls: list[tuple[str, dict[str, Any] | str]],
        *,
        text: str | None = None,
        prompt_tokens: int = 10,
        completion_tokens: int = 5,
        model: str | None = None,
    ) -> None:
        """Queue a tool-call reply; a `str` argument is sent verbatim (e.g. invalid JSON)."""
        tool_calls = [
            {
                "id": f"call_{next(self._ids)}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for name, args in calls
        ]
        self._replies.append(
            self.completion_body(
                {"role": "assistant", "content": text, "refusal": None, "tool_calls": tool_calls},
                finish_reason="tool_calls",
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                model=model,
            )
        )

    def completion_body(
        self,
        message: dict[str, Any],
        *,
        finish_reason: str = "stop",
        prompt_tokens: int = 10,
        completion_tokens: int = 5,
        model: str | None = None,
    ) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,  # None: echo the request's model
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    # --- inspection ----------------------------------------------------------------------
    @property
    def requests(self) -> list[Any]:
        """JSON bodies of every chat-completions request received (including failed ones)."""
        return [r.body for r in self.log if r.path.endswith("/chat/completions")]

    @property
    def pending_replies(self) -> int:
        return len(self._replies)

    # --- handlers ------------------------------------------------------------------------
    def _unauthorized(self, request: web.Request) -> web.Response | None:
        if self.azure_deployment and request.path.startswith("/openai/"):
            # https://learn.microsoft.com/en-us/azure/ai-services/openai/reference
            if request.match_info.get("deployment") != self.azure_deployment:
                return web.json_response(
                    {"error": {"code": "DeploymentNotFound", "message": "deployment not found"}},
                    status=404,
                )
            if not request.query.get("api-version"):
                return web.json_response(
                    {"error": {"code": "404", "message": "Resource not found"}}, status=404
                )
            if request.headers.get("api-key") == self.api_key:
                return None
            return web.json_response(
                {
                    "error": {
                        "code": "401",
                        "message": "Access denied due to invalid subscription key",
                    }
                },
                status=401,
            )
        if request.headers.get("Authorization") == f"Bearer {self.api_key}":
            return None
        return web.json_response(
            openai_error("Incorrect API key provided.", code="invalid_api_key"), status=401
        )

    async def _models(self, request: web.Request) -> web.Response:
        self.log.append(RecordedRequest(request.method, request.path, dict(request.headers), None))
        if not self.models_endpoint:
            return web.json_response(openai_error("Not found", code="not_found"), status=404)
        if (denied := self._unauthorized(request)) is not None:
            return denied
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.models]
        return web.json_response({"object": "list", "data": data})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self.log.append(RecordedRequest(request.method, request.path, dict(request.headers), body))
        if (denied := self._unauthorized(request)) is not None:
            return denied

        if self._together:
            self._held += 1
            if self._held >= self._together:
                self._all_in.set()
            closing = asyncio.ensure_future(self._closing.wait())
            try:
                await asyncio.wait(
                    [closing, asyncio.ensure_future(self._all_in.wait())],
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                closing.cancel()

        if self._faults:
            fault = self._faults.popleft()
            if isinstance(fault, _Failure):
                return web.json_response(fault.body, status=fault.status, headers=fault.headers)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), fault.seconds)
            if request.transport is None or request.transport.is_closing():
                # The client gave up (timed out); do not spend a queued reply on it.
                return web.json_response(openai_error("client went away"), status=499)

        problem = _validate(body, streams=self.streams)
        if problem is not None:
            return web.json_response(openai_error(problem), status=400)
        if self.extra_check is not None and (denied_by := self.extra_check(body)) is not None:
            return web.json_response(denied_by[1], status=denied_by[0])

        reply = self._replies.popleft() if self._replies else None
        if reply is None:
            reply = self.completion_body({"role": "assistant", "content": "ok", "refusal": None})
        if isinstance(reply, dict) and reply.get("model", "") is None:
            reply = {**reply, "model": body["model"]}
        if body.get("stream"):
            return await _stream(request, reply, body)
        return web.json_response(reply)


async def _stream(request: web.Request, reply: Any, body: dict[str, Any]) -> web.StreamResponse:
    """The reply as `chat.completion.chunk` events, the way OpenAI streams: a role chunk,
    content (and reasoning) in pieces, each tool call's id and name first and its arguments
    in pieces, the finish reason, the usage chunk when asked for, then `[DONE]`.
    https://platform.openai.com/docs/api-reference/chat-streaming"""
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for chunk in stream_chunks(reply, include_usage=_wants_usage(body)):
        await response.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


def _wants_usage(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and bool(options.get("include_usage"))


def _pieces(text: str, n: int = 3) -> list[str]:
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


def stream_chunks(reply: dict[str, Any], *, include_usage: bool) -> list[dict[str, Any]]:
    base = {"id": reply.get("id", "chatcmpl-x"), "object": "chat.completion.chunk"}
    base |= {"created": reply.get("created", 0), "model": reply.get("model")}
    choice = reply["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    for key in ("reasoning_content", "reasoning", "content"):
        if isinstance(message.get(key), str):
            chunks += [chunk({key: piece}) for piece in _pieces(message[key])]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        head = {"index": index, "id": call["id"], "type": "function"}
        chunks.append(chunk({"tool_calls": [head | {"function": {"name": function["name"]}}]}))
        for piece in _pieces(function["arguments"], 2):
            chunks.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            )
    chunks.append(chunk({}, choice.get("finish_reason")))
    if include_usage and reply.get("usage"):
        chunks.append({**base, "choices": [], "usage": reply["usage"]})
    return chunks


def _validate(body: Any, *, streams: bool = True) -> str | None:
    """The checks a real server makes that catch mapping bugs in a client."""
    if not isinstance(body, dict):
        return "We could not parse the JSON body of your request."
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    if body.get("stream") and not streams:
        return "stream is not supported by this server"
    open_calls: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return f"Invalid value for 'messages[{index}].role': {role!r}"
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                if call.get("type") != "function" or not isinstance(function.get("arguments"), str):
                    return f"Invalid 'messages[{index}].tool_calls': {call!r}"
                open_calls.add(call.get("id"))
        elif role == "tool":
            if message.get("tool_call_id") not in open_calls:
                return (
                    f"Invalid parameter: messages with role 'tool' must be a response to a "
                    f"preceding message with 'tool_calls' (messages[{index}])."
                )
        elif not isinstance(message.get("content"), str | list):
            return f"Invalid type for 'messages[{index}].content'"
    for index, tool in enumerate(body.get("tools") or []):
        function = tool.get("function") if isinstance(tool, dict) else None
        if (
            not isinstance(tool, dict)
            or tool.get("type") != "function"
            or not isinstance(function, dict)
            or not isinstance(function.get("name"), str)
        ):
            return f"Invalid 'tools[{index}]': {tool!r}"
    return None

"""The model stand-in: the OpenAI-compatible loopback fake, answering every Bot turn the way
a well-behaved model would, from the request alone (so any number of turns, from any
process, can run at once).

A Bot turn's input names each message (`[m1] … ou_x (user): ping <token>`); the stand-in
answers with one step: `send_user("pong <token>")` for every input not answered yet in this
turn, then `sleep`. When `sleep` is refused because new input arrived, the refusal carries
that input, and the next step answers it. Other callers (summaries, indexers) get "ok".

Faults: `outage(status)` answers every chat request with that HTTP status; `hang()` answers
nothing until the client gives up; `slow(seconds)` delays every Bot step;
`park_after_reply()` splits the next turn into a reply step and a `sleep` step and holds
the latter, so a test can kill the process in the middle of a turn whose reply is queued;
`park_after_search()` makes the next turn search memory first (so it shows a progress card)
and holds the step after the search, before any reply. `call_next(tool, arguments)`: the next
turn with input calls that tool first (an owner asking for an action), then answers as ever.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest, _validate, openai_error

BOT_PROMPT = "You are Maka"
INPUT = re.compile(r"\[(m\d+)\][^\n]*?: ping (\S+)")
ANSWER = re.compile(r"pong (\S+)")


def ping(token: str) -> str:
    return f"ping {token}"


def pong(token: str) -> str:
    return f"pong {token}"


def answered_token(text: str) -> str | None:
    match = ANSWER.search(text)
    return match.group(1) if match else None


@dataclass
class BotStep:
    """What one Bot request showed: the inputs of the turn so far and those answered."""

    inputs: list[str]
    answered: list[str]
    searched: bool = False  # the turn called memory_search

    @property
    def unanswered(self) -> list[str]:
        done = set(self.answered)
        return [token for token in dict.fromkeys(self.inputs) if token not in done]


def read_bot_step(messages: list[dict[str, Any]]) -> BotStep:
    """The turn is everything from the last user message on (earlier pairs are history)."""
    last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    inputs: list[str] = []
    answered: list[str] = []
    searched = False
    for message in messages[last_user:]:
        content = message.get("content")
        if message.get("role") in ("user", "tool") and isinstance(content, str):
            inputs += [token for _ref, token in INPUT.findall(content)]
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            searched = searched or function.get("name") == "memory_search"
            if function.get("name") != "send_user":
                continue
            token = answered_token(str(json.loads(function.get("arguments") or "{}").get("text")))
            if token:
                answered.append(token)
    return BotStep(inputs, answered, searched)


@dataclass
class Parked:
    """A Bot request held by the stand-in until `release()`."""

    step: BotStep
    released: asyncio.Event = field(default_factory=asyncio.Event)

    def release(self) -> None:
        self.released.set()


class ModelStandIn(FakeOpenAIServer):
    def __init__(self) -> None:
        super().__init__(models=["fake-model"])
        self.bot_requests = 0
        self.other_requests = 0
        self.failed_requests = 0  # answered with an outage status, or left hanging
        self.timed_out = 0  # left hanging until the client gave up
        self._outage_status: int | None = None
        self._hanging = False
        self._park_when: Callable[[BotStep], bool] | None = None
        self._split_next = False
        self._search_next = False
        self._call_next: tuple[str, dict[str, Any]] | None = None
        self._step_delay = 0.0
        self.parked: asyncio.Queue[Parked] = asyncio.Queue()

    # --- faults --------------------------------------------------------------------------
    def outage(self, status: int | None) -> None:
        """Every chat request answers `status` (e.g. 503) until `outage(None)`."""
        self._outage_status = status

    def hang(self, on: bool = True) -> None:
        """Chat requests get no answer until the client gives up (or `hang(False)`)."""
        self._hanging = on

    def slow(self, seconds: float) -> None:
        """Every Bot step takes `seconds` before it answers (0: answer at once)."""
        self._step_delay = seconds

    def park_next_bot_step(self, when: Callable[[BotStep], bool] = lambda _step: True) -> None:
        """Hold the next Bot request for which `when(step)` holds; it shows up in `parked`."""
        self._park_when = when

    def park_after_reply(self) -> None:
        """The next Bot step with input to answer only replies (no `sleep`); the step after
        it, whose replies are queued and whose batch is not yet marked handled, is held."""
        self._split_next = True
        self.park_next_bot_step(lambda step: bool(step.answered) and not step.unanswered)

    def park_after_search(self) -> None:
        """The next Bot step with input to answer calls `memory_search` instead (the turn
        then shows a progress card); the step after it, before any reply, is held."""
        self._search_next = True
        self.park_next_bot_step(lambda step: step.searched and bool(step.unanswered))

    def call_next(self, tool: str, arguments: dict[str, Any]) -> None:
        """The next Bot step with input to answer calls `tool(**arguments)` alone; the step
        after it answers the input as usual."""
        self._call_next = (tool, arguments)

    # --- the chat endpoint ---------------------------------------------------------------
    async def _chat(self, request: web.Request) -> web.Response:
        raw = await request.read()
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self.log.append(RecordedRequest(request.method, request.path, dict(request.headers), body))
        if (denied := self._unauthorized(request)) is not None:
            return denied
        if self._outage_status is not None:
            self.failed_requests += 1
            error = openai_error(f"injected outage {self._outage_status}", "server_error")
            return web.json_response(error, status=self._outage_status)
        if self._hanging:
            self.failed_requests += 1
            try:
                while self._hanging and not _gone(request):
                    await asyncio.sleep(0.05)
            except asyncio.CancelledError:  # the client went away and took the handler along
                self.timed_out += 1
                raise
            if _gone(request):
                self.timed_out += 1
                return web.json_response(openai_error("client went away"), status=499)
        problem = _validate(body)
        if problem is not None:
            return web.json_response(openai_error(problem), status=400)
        messages = body["messages"]
        if not str(messages[0].get("content") or "").startswith(BOT_PROMPT):
            self.other_requests += 1
            message = {"role": "assistant", "content": "ok", "refusal": None}
            return web.json_response(self.completion_body(message, model=body["model"]))
        self.bot_requests += 1
        step = read_bot_step(messages)
        if self._step_delay:
            await asyncio.sleep(self._step_delay)
        if self._park_when is not None and self._park_when(step):
            self._park_when = None
            parked = Parked(step)
            await self.parked.put(parked)
            with contextlib.suppress(TimeoutError):  # the test releases it, or gives up
                async with asyncio.timeout(120):
                    await parked.released.wait()
        split = self._split_next and bool(step.unanswered)
        if split:
            self._split_next = False
        search = self._search_next and bool(step.unanswered) and not step.searched
        if search:
            self._search_next = False
        if self._call_next is not None and step.unanswered:
            called, self._call_next = [self._call_next], None
            return web.json_response(self._tool_calls(called, body["model"]))
        reply = self._bot_reply(step, body["model"], sleep=not split, search=search)
        return web.json_response(reply)

    def _bot_reply(
        self, step: BotStep, model: str, *, sleep: bool, search: bool = False
    ) -> dict[str, Any]:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("send_user", {"text": pong(token)}) for token in step.unanswered
        ]
        if search:
            calls = [("memory_search", {"query": "what was said before"})]
        elif sleep or not calls:
            calls.append(("sleep", {}))
        return self._tool_calls(calls, model)

    def _tool_calls(self, calls: list[tuple[str, dict[str, Any]]], model: str) -> dict[str, Any]:
        tool_calls = [
            {
                "id": f"call_{next(self._ids)}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for name, args in calls
        ]
        message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": tool_calls}
        return self.completion_body(message, finish_reason="tool_calls", model=model)


def _gone(request: web.Request) -> bool:
    """The client closed the connection (it gave up waiting)."""
    return request.transport is None or request.transport.is_closing()

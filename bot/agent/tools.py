"""Tools as typed functions: the signature is the schema, the docstring the description.

    @registry.tool
    async def send_user(ctx: TurnContext, text: str, reply_to: str | None = None) -> str:
        '''Send a message to the user. ...'''

The first parameter is the run context and is not part of the schema. Arguments from the
model are validated against the signature before the function runs; a validation error goes
back to the model as the tool's result, so it can correct itself.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from bot.llm.types import ToolCall, ToolSpec
from storage.types import UNSTORABLE

log = logging.getLogger(__name__)

Ctx = TypeVar("Ctx")
ToolFunc = Callable[..., Awaitable[Any]]


class ToolError(Exception):
    """An expected failure the model should read and react to (not a crash)."""


@dataclass(frozen=True)
class Tool(Generic[Ctx]):
    name: str
    description: str
    func: ToolFunc
    params: type[BaseModel]

    @functools.cached_property
    def spec(self) -> ToolSpec:
        """Built once: generating a JSON schema is a tenth of a busy process's time."""
        schema = self.params.model_json_schema()
        schema.pop("title", None)
        return ToolSpec(name=self.name, description=self.description, parameters=schema)

    async def call(self, ctx: Ctx, arguments: dict[str, Any]) -> Any:
        args = self.params.model_validate(arguments)
        return await self.func(ctx, **{k: getattr(args, k) for k in self.params.model_fields})


def tool_from_function(func: ToolFunc, name: str | None = None) -> Tool[Any]:
    signature = inspect.signature(func)
    hints = get_type_hints(func, include_extras=True)  # keeps Field bounds: bot/parsing.py
    parameters = list(signature.parameters.values())[1:]  # the first is the context
    fields: dict[str, Any] = {}
    for param in parameters:
        annotation = hints.get(param.name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    model = create_model(
        f"{func.__name__}_args",
        __config__=ConfigDict(extra="forbid"),
        **fields,
    )
    doc = inspect.getdoc(func) or ""
    return Tool(name=name or func.__name__, description=doc, func=func, params=model)


@dataclass(frozen=True)
class ToolOutcome:
    call: ToolCall
    output: str
    error: bool = False


class ToolRegistry(Generic[Ctx]):
    def __init__(self, tools: Iterable[Tool[Ctx]] = ()) -> None:
        self._tools: dict[str, Tool[Ctx]] = {t.name: t for t in tools}

    def tool(self, func: ToolFunc) -> ToolFunc:
        """Decorator: register `func` under its own name."""
        self.add(tool_from_function(func))
        return func

    def add(self, tool: Tool[Ctx]) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} registered twice")
        self._tools[tool.name] = tool

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        return [t.spec for t in self._tools.values()]

    async def run(self, ctx: Ctx, call: ToolCall) -> ToolOutcome:
        tool = self._tools.get(call.name)
        if tool is None:
            return ToolOutcome(call, f"error: no tool named {call.name!r}", error=True)
        if call.parse_error:
            return ToolOutcome(
                call, f"error: arguments are not valid JSON: {call.parse_error}", error=True
            )
        unstorable = _unstorable_at(call.arguments)
        if unstorable is not None:  # it would fail the write, and with it the whole turn
            return ToolOutcome(
                call,
                f"error: invalid arguments: {unstorable}: holds a NUL or a lone surrogate, "
                "which cannot be stored; leave it out",
                error=True,
            )
        try:
            result = await tool.call(ctx, call.arguments)
        except ValidationError as exc:
            return ToolOutcome(call, f"error: invalid arguments: {_brief_validation(exc)}", True)
        except ToolError as exc:
            return ToolOutcome(call, f"error: {exc}", error=True)
        return ToolOutcome(call, render_result(result))


def render_result(result: Any) -> str:
    if result is None:
        return "ok"
    if isinstance(result, str):
        return result
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    return json.dumps(result, ensure_ascii=False, default=str)


def _unstorable_at(arguments: dict[str, Any]) -> str | None:
    """Where (as a dotted path) a string no database column takes is, if anywhere."""
    todo: list[tuple[str, Any]] = [(str(k), v) for k, v in arguments.items()]
    while todo:
        path, value = todo.pop()
        if isinstance(value, str) and UNSTORABLE.search(value):
            return path
        if isinstance(value, dict):
            todo += [(f"{path}.{k}", v) for k, v in value.items()]
        elif isinstance(value, list):
            todo += [(f"{path}.{n}", v) for n, v in enumerate(value)]
    return None


def _brief_validation(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
        for err in exc.errors()
    )

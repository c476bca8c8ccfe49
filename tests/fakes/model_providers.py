"""Stand-ins for the model provider families people run Feishu bots on, each the loopback
`FakeOpenAIServer` set up the way that family's documented answers and errors look: where its
reasoning text comes (a `reasoning_content` field, a `reasoning` field, `<think>` blocks in
the content), whether it reports usage, and its error bodies for an input too long for the
context window and for its content filter. Each family cites the pages it follows; a detail
that could not be confirmed there is marked "from memory".
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

from tests.fakes.openai_server import FakeOpenAIServer

Reasoning = Literal["none", "reasoning_content", "reasoning", "think"]
ErrorReply = tuple[int, dict[str, Any]]


@dataclass(frozen=True)
class ProviderFamily:
    name: str
    docs: tuple[str, ...]
    model: str
    reasoning: Reasoning
    context_error: ErrorReply | None  # None: the family truncates silently
    # The content filter: an error reply, or None when it ends the answer with
    # `finish_reason` `filter_reason` instead.
    filter_error: ErrorReply | None
    filter_reason: str = "content_filter"
    usage: bool = True
    azure: bool = False
    # DeepSeek's thinking mode: a tool-calling assistant turn sent back without its
    # reasoning_content is a 400.
    needs_reasoning_back: bool = False
    no_tools_error: ErrorReply | None = None
    # Qwen's open thinking models (qwen3-32b ...) over DashScope: a non-streamed request
    # must turn thinking off.
    thinks_only_streamed: bool = False

    def message(
        self, text: str | None, reasoning: str, tool_calls: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """An assistant message the way this family writes it."""
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if self.reasoning in ("reasoning_content", "reasoning"):
            message[self.reasoning] = reasoning
        elif self.reasoning == "think":
            message["content"] = f"<think>\n{reasoning}\n</think>\n\n{text or ''}"
        if tool_calls:
            message["tool_calls"] = tool_calls
        return message

    def reply(
        self,
        server: FakeOpenAIServer,
        text: str | None,
        *,
        reasoning: str = "",
        calls: list[tuple[str, Any]] = (),  # type: ignore[assignment]
        finish_reason: str | None = None,
    ) -> None:
        """Queue one answer (tool call arguments given as str are sent verbatim)."""
        tool_calls = [
            {
                "id": f"call_{self.name}_{index}_{len(server.requests)}_{server.pending_replies}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for index, (name, args) in enumerate(calls)
        ]
        body = server.completion_body(
            self.message(text, reasoning or f"({self.name} thinking it over)", tool_calls),
            finish_reason=finish_reason or ("tool_calls" if tool_calls else "stop"),
        )
        if not self.usage:
            del body["usage"]
        server.reply_raw(body)

    def refuse(self, server: FakeOpenAIServer) -> None:
        if self.filter_error is not None:
            server.fail_next(self.filter_error[0], body=self.filter_error[1])
        else:
            self.reply(server, "", finish_reason=self.filter_reason)

    def too_long(self, server: FakeOpenAIServer) -> None:
        assert self.context_error is not None
        server.fail_next(self.context_error[0], body=self.context_error[1])

    def check(self, body: Any) -> ErrorReply | None:
        """The family's own checks of a request, beyond the OpenAI ones."""
        if self.no_tools_error is not None and body.get("tools"):
            return self.no_tools_error
        if self.thinks_only_streamed and not body.get("stream"):
            if body.get("enable_thinking") is not False:
                return 400, _error(
                    "parameter.enable_thinking must be set to false for non-streaming calls",
                    "invalid_request_error",
                    "invalid_parameter_error",
                )
        if self.needs_reasoning_back:
            for index, message in enumerate(body.get("messages") or []):
                if (
                    message.get("role") == "assistant"
                    and message.get("tool_calls")
                    and not message.get("reasoning_content")
                ):
                    return 400, _error(
                        f"Missing `reasoning_content` field in the assistant message at "
                        f"message index {index}",
                        "invalid_request_error",
                    )
        return None

    @asynccontextmanager
    async def serve(self, *, streams: bool = True) -> AsyncIterator[FakeOpenAIServer]:
        server = FakeOpenAIServer(
            models=[self.model],
            streams=streams,
            azure_deployment=self.model if self.azure else None,
        )
        server.extra_check = self.check
        async with server:
            yield server


def _error(message: str, type_: str, code: str | None = None, **more: Any) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code, **more}}


OPENAI = ProviderFamily(
    "openai",
    (
        "https://platform.openai.com/docs/api-reference/chat/object",  # finish_reason values
        "https://platform.openai.com/docs/guides/error-codes",
    ),
    "gpt-4o-mini",
    "none",
    context_error=(
        400,
        _error(
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 130412 tokens. Please reduce the length of the messages.",
            "invalid_request_error",
            "context_length_exceeded",
        ),
    ),
    filter_error=None,  # finish_reason "content_filter"
)

AZURE = ProviderFamily(
    "azure",
    (
        "https://learn.microsoft.com/en-us/azure/ai-services/openai/reference",
        "https://learn.microsoft.com/en-us/azure/ai-services/openai/concepts/content-filter",
    ),
    "gpt-4o-deploy",  # the deployment's name
    "none",
    context_error=(
        400,
        _error(
            "This model's maximum context length is 8192 tokens. However, your messages "
            "resulted in 9000 tokens. Please reduce the length of the messages.",
            "invalid_request_error",
            "context_length_exceeded",
        ),
    ),
    filter_error=(
        400,
        {
            "error": {
                "message": "The response was filtered due to the prompt triggering Azure "
                "OpenAI's content management policy. Please modify your prompt and retry.",
                "type": None,
                "param": "prompt",
                "code": "content_filter",
                "status": 400,
                "innererror": {
                    "code": "ResponsibleAIPolicyViolation",
                    "content_filter_result": {"hate": {"filtered": True, "severity": "high"}},
                },
            }
        },
    ),
    azure=True,
)

DEEPSEEK = ProviderFamily(
    "deepseek",
    (
        "https://api-docs.deepseek.com/guides/reasoning_model",
        # reasoning_content handed back on tool turns:
        "https://api-docs.deepseek.com/guides/thinking_mode",
        "https://api-docs.deepseek.com/quick_start/error_codes",
    ),
    "deepseek-reasoner",
    "reasoning_content",
    context_error=(
        400,  # message from memory
        _error(
            "This model's maximum context length is 65536 tokens. However, you requested "
            "70123 tokens (70123 in the messages, 0 in the completion). Please reduce the "
            "length of the messages or completion.",
            "invalid_request_error",
            "invalid_request_error",
        ),
    ),
    filter_error=None,  # finish_reason "content_filter" (create-chat-completion reference)
    needs_reasoning_back=True,
)

QWEN = ProviderFamily(
    "qwen",
    (
        "https://help.aliyun.com/en/model-studio/deep-thinking",  # reasoning_content
        "https://help.aliyun.com/en/model-studio/error-code",
    ),
    "qwen3-32b",
    "reasoning_content",
    context_error=(
        400,  # message from memory
        _error(
            "<400> InternalError.Algo.InvalidParameter: Range of input length should be "
            "[1, 129024]",
            "invalid_request_error",
            "invalid_parameter_error",
        ),
    ),
    filter_error=(
        400,
        _error(
            "Input data may contain inappropriate content.",
            "data_inspection_failed",
            "data_inspection_failed",
        ),
    ),
    thinks_only_streamed=True,  # the message from memory
)

MOONSHOT = ProviderFamily(
    "moonshot",
    ("https://platform.moonshot.cn/docs/api/chat",),  # error bodies from memory
    "kimi-k2-0905-preview",
    "none",
    context_error=(
        400,
        _error(
            "Invalid request: Your request exceeded model token limit: 262144",
            "invalid_request_error",
        ),
    ),
    filter_error=(
        400,
        _error("The request was rejected because it was considered high risk", "content_filter"),
    ),
)

GLM = ProviderFamily(
    "glm",
    (
        "https://docs.z.ai/api-reference/api-code",  # 1301, 1302, 1113
        "https://docs.z.ai/guides/capabilities/thinking",
    ),
    "glm-4.6",
    "reasoning_content",
    context_error=(400, {"error": {"code": "1261", "message": "Prompt exceeds max length"}}),
    filter_error=(
        400,
        {
            "error": {
                "code": "1301",
                "message": "System detected potentially unsafe or sensitive content in input "
                "or generation. Please avoid using prompts that may generate sensitive content.",
            }
        },
    ),
)

DOUBAO = ProviderFamily(
    "doubao",
    (
        "https://www.volcengine.com/docs/82379/1298454",  # chat API, reasoning_content
        "https://www.volcengine.com/docs/82379/1299023",  # error codes (from memory)
    ),
    "doubao-seed-1-6-250615",
    "reasoning_content",
    context_error=(
        400,
        _error(
            "Total tokens of image and text exceed max message tokens.",
            "BadRequest",
            "InvalidParameter",
        ),
    ),
    filter_error=(
        400,
        _error(
            "The request failed because the input text may contain sensitive information.",
            "BadRequest",
            "InputTextSensitiveContentDetected",
        ),
    ),
)

OLLAMA = ProviderFamily(
    "ollama",
    ("https://github.com/ollama/ollama/blob/main/docs/openai.md",),
    "qwq",
    "think",  # a model's template without a reasoning parser
    context_error=None,  # Ollama truncates the prompt to num_ctx silently
    filter_error=None,  # no filter; finish_reason kept for the suite's sake
    usage=False,
)

VLLM = ProviderFamily(
    "vllm",
    ("https://docs.vllm.ai/en/latest/features/reasoning_outputs.html",),
    "Qwen/Qwen3-8B",
    "reasoning",  # `reasoning_content` before v0.10 (from memory)
    context_error=(
        400,
        _error(
            "This model's maximum context length is 32768 tokens. However, you requested "
            "33000 tokens in the messages, Please reduce the length of the messages.",
            "BadRequestError",
        ),
    ),
    filter_error=None,
    usage=False,
)

LLAMACPP = ProviderFamily(
    "llamacpp",
    ("https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md",),
    "DeepSeek-R1-Distill-Qwen-7B",
    "think",
    context_error=(
        400,  # from memory
        {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
            }
        },
    ),
    filter_error=None,
    usage=False,
)

FAMILIES = (OPENAI, AZURE, DEEPSEEK, QWEN, MOONSHOT, GLM, DOUBAO, OLLAMA, VLLM, LLAMACPP)

# A local model that cannot call tools, as Ollama answers for it.
OLLAMA_NO_TOOLS = ProviderFamily(
    "ollama-no-tools",
    ("https://github.com/ollama/ollama/blob/main/docs/openai.md",),
    "gemma2:2b",
    "none",
    context_error=None,
    filter_error=None,
    usage=False,
    no_tools_error=(
        400,
        _error("registry.ollama.ai/library/gemma2:2b does not support tools", "api_error"),
    ),
)

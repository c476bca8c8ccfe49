"""What the one provider does about answers that are not yet usable, the same for every
caller and every endpoint: an input too long for the model is shrunk once and asked again;
tool arguments that are not JSON (after `bot.llm.tool_json`'s repairs) are asked for again
once; an answer cut at `max_tokens` is continued once, and cut at a sentence, marked, if it
still does not end; the content filter's refusal is raised as `ModelRefused`."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from bot.llm.reasoning import join_reasoning
from bot.llm.types import (
    Completion,
    Message,
    ModelContextTooLong,
    ModelRefused,
    ToolSpec,
    Usage,
)

log = logging.getLogger(__name__)

Exchange = Callable[[Sequence[Message], Sequence[ToolSpec]], Awaitable[Completion]]

# OpenAI and most: "content_filter"; Zhipu GLM: "sensitive".
FILTERED_REASONS = frozenset({"content_filter", "sensitive"})
CONTINUE_PROMPT = "Your answer was cut off. Continue exactly where it stopped; repeat nothing."
CUT_MARK = " […]"
# A tool result longer than this is cut when the input must shrink.
SHRUNK_TOOL_CHARS = 2000
_SENTENCE_END = re.compile(r"[.!?。！？\n](?=[^.!?。！？\n]*$)")


async def complete_with_recovery(
    exchange: Exchange, messages: Sequence[Message], tools: Sequence[ToolSpec]
) -> Completion:
    completion, messages = await _fitting(exchange, messages, tools)
    if completion.finish_reason in FILTERED_REASONS:
        reason = completion.finish_reason
        raise ModelRefused(f"the endpoint's content filter stopped the answer ({reason})")
    if any(not call.ok for call in completion.tool_calls):
        completion = await _asked_again(exchange, messages, tools, completion)
    if completion.finish_reason == "length" and completion.text and not completion.tool_calls:
        completion = await _continued(exchange, messages, tools, completion)
    return completion


async def _fitting(
    exchange: Exchange, messages: Sequence[Message], tools: Sequence[ToolSpec]
) -> tuple[Completion, Sequence[Message]]:
    try:
        return await exchange(messages, tools), messages
    except ModelContextTooLong as exc:
        smaller = shrink(messages)
        if smaller is None:
            raise
        log.warning("the model's context is full (%s); asking again with less history", exc)
        return await exchange(smaller, tools), smaller


def shrink(messages: Sequence[Message]) -> list[Message] | None:
    """The input with the oldest history dropped and long tool results cut, keeping the
    system prompt and the last user message with what followed it; None if nothing could
    go."""
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
    if last_user is None:
        return None
    head = [m for m in messages[:last_user] if m.role == "system"]
    dropped = last_user - len(head)
    tail: list[Message] = []
    cut = 0
    for message in messages[last_user:]:
        content = message.content or ""
        if message.role == "tool" and len(content) > SHRUNK_TOOL_CHARS:
            message = replace(message, content=content[:SHRUNK_TOOL_CHARS] + "\n[…cut to fit]")
            cut += 1
        tail.append(message)
    if not dropped and not cut:
        return None
    return head + tail


async def _asked_again(
    exchange: Exchange,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    bad: Completion,
) -> Completion:
    broken = next(call for call in bad.tool_calls if not call.ok)
    log.warning("tool call %s had malformed arguments; asking once more", broken.name)
    note = (
        f"Your call of the tool {broken.name} was not run: its {broken.parse_error}. "
        "Call it again with the arguments as one valid JSON object."
    )
    again = await exchange([*messages, Message.user(note)], tools)
    return _summed(again, bad)


async def _continued(
    exchange: Exchange,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    cut: Completion,
) -> Completion:
    more = await exchange(
        [*messages, Message.assistant(cut.text), Message.user(CONTINUE_PROMPT)], tools
    )
    text = (cut.text or "") + (more.text or "")
    finish = more.finish_reason
    if finish == "length" or more.tool_calls:
        text, finish = cut_at_sentence(text), "length"
    joined = replace(more, text=text, tool_calls=[], finish_reason=finish)
    return _summed(joined, cut)


def cut_at_sentence(text: str) -> str:
    """`text` up to its last full sentence, marked as cut, so no half sentence goes out
    looking whole."""
    end = _SENTENCE_END.search(text)
    kept = text[: end.end()] if end and end.end() > len(text) // 3 else text
    return kept.rstrip() + CUT_MARK


def _summed(last: Completion, earlier: Completion) -> Completion:
    usage = Usage(
        last.usage.input_tokens + earlier.usage.input_tokens,
        last.usage.output_tokens + earlier.usage.output_tokens,
        last.usage.estimated or earlier.usage.estimated,
    )
    return replace(last, usage=usage, reasoning=join_reasoning(earlier.reasoning, last.reasoning))

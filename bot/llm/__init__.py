"""The model layer: one async interface for every model call in the project."""

from bot.llm.client import (
    CallRecorder,
    MemoryRecorder,
    ModelCallRecord,
    ModelClient,
    ModelProvider,
    NullRecorder,
)
from bot.llm.types import (
    Completion,
    Message,
    ModelError,
    ModelNotConfigured,
    ModelRequestRejected,
    ModelUnavailable,
    ToolCall,
    ToolSpec,
    Usage,
)

__all__ = [
    "CallRecorder",
    "Completion",
    "MemoryRecorder",
    "Message",
    "ModelCallRecord",
    "ModelClient",
    "ModelError",
    "ModelNotConfigured",
    "ModelProvider",
    "ModelRequestRejected",
    "ModelUnavailable",
    "NullRecorder",
    "ToolCall",
    "ToolSpec",
    "Usage",
]

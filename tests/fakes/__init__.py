"""Loopback fakes of external SaaS APIs for tests."""

from .feishu import (
    Chat,
    FeishuApiError,
    FeishuEventSender,
    FeishuFake,
    HistoryMessage,
    Mention,
    RecordedRequest,
    SentMessage,
    WsClientConfig,
    WsDelivery,
    WsFrame,
    WsNotConnected,
    WsPing,
    WsPushTimeout,
    decrypt_event,
    sign_event,
)

__all__ = [
    "Chat",
    "FeishuApiError",
    "FeishuEventSender",
    "FeishuFake",
    "HistoryMessage",
    "Mention",
    "RecordedRequest",
    "SentMessage",
    "WsClientConfig",
    "WsDelivery",
    "WsFrame",
    "WsNotConnected",
    "WsPing",
    "WsPushTimeout",
    "decrypt_event",
    "sign_event",
]

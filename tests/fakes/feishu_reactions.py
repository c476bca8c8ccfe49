"""Message reactions of the Feishu fake: add, remove and list, as `server-docs/im-v1/
message-reaction/{create,delete,list}` describe them.

- POST   /open-apis/im/v1/messages/:message_id/reactions   {"reaction_type": {"emoji_type"}}
- DELETE /open-apis/im/v1/messages/:message_id/reactions/:reaction_id
- GET    /open-apis/im/v1/messages/:message_id/reactions?reaction_type=&page_size=&page_token=
Each answers a reaction as `{reaction_id, operator: {operator_id, operator_type}, action_time,
reaction_type: {emoji_type}}` (`data.items` for the list). An app's reactions name it by its
app_id with `operator_type` "app". The docs: a recalled message takes no reaction; only the
operator's own reaction can be removed, and it must exist. They do not say what a second add
of the same emoji by the same operator does, so the fake counts it as a second reaction (the
stricter assumption: a client that adds twice shows up twice). `reactions_log` records every
add and removal in order, so tests can assert what happened when.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from .feishu_im import _field_error, _int_param, _paginate
from .feishu_models import (
    MESSAGE_RECALLED,
    REACTION_MESSAGE_NOT_FOUND,
    REACTION_NOT_FOUND,
    REACTION_TYPE_INVALID,
    FeishuApiError,
    HistoryMessage,
    JSONDict,
    new_id,
)

# The emoji_types the fake accepts: a subset of the documented list ("表情文案说明",
# server-docs/im-v1/message-reaction/emojis-introduce). Anything else is 231001.
EMOJI_TYPES = frozenset(
    {
        "OK",
        "THUMBSUP",
        "THANKS",
        "MUSCLE",
        "DONE",
        "SMILE",
        "JIAYI",
        "Typing",
        "OnIt",
        "Get",
        "CrossMark",
        "CheckMark",
        "ERROR",
    }
)


@dataclass
class Reaction:
    reaction_id: str
    message_id: str
    emoji_type: str
    operator_id: str
    operator_type: str  # "app" | "user"
    action_time_ms: int

    def to_api(self) -> JSONDict:
        return {
            "reaction_id": self.reaction_id,
            "operator": {"operator_id": self.operator_id, "operator_type": self.operator_type},
            "action_time": str(self.action_time_ms),
            "reaction_type": {"emoji_type": self.emoji_type},
        }


@dataclass(frozen=True)
class ReactionEvent:
    """One add or removal, in the order the fake handled them."""

    action: str  # "add" | "remove"
    message_id: str
    emoji_type: str
    reaction_id: str
    time: float


class ReactionHandlers:
    """Mixin for FeishuFake: reactions on the messages `ImHandlers` keeps."""

    messages: dict[str, HistoryMessage]

    def __init__(self) -> None:
        self.reactions: dict[str, Reaction] = {}  # reaction_id -> the live reaction
        self.reactions_log: list[ReactionEvent] = []

    def now(self) -> float:
        raise NotImplementedError

    def authenticate(self, request: web.Request) -> str:
        raise NotImplementedError

    def add_reaction_routes(self, app: web.Application) -> None:
        base = "/open-apis/im/v1/messages/{message_id}/reactions"
        app.router.add_post(base, self._add_reaction)
        app.router.add_get(base, self._list_reactions)
        app.router.add_delete(base + "/{reaction_id}", self._remove_reaction)

    # ---- state for tests -------------------------------------------------------------------

    def reactions_on(self, message_id: str, emoji_type: str | None = None) -> list[Reaction]:
        """The live reactions on a message (of one emoji, if given), oldest first."""
        return [
            r
            for r in self.reactions.values()
            if r.message_id == message_id and emoji_type in (None, r.emoji_type)
        ]

    # ---- endpoints -------------------------------------------------------------------------

    def _message(self, message_id: str) -> HistoryMessage:
        message = self.messages.get(message_id)
        if message is None:
            raise FeishuApiError(REACTION_MESSAGE_NOT_FOUND, detail=message_id)
        if message.deleted:
            raise FeishuApiError(MESSAGE_RECALLED)
        return message

    async def _add_reaction(self, request: web.Request) -> web.Response:
        app_id = self.authenticate(request)
        try:
            body: Any = json.loads(await request.read())
        except ValueError:
            raise _field_error("body", "invalid JSON") from None
        reaction_type = body.get("reaction_type") if isinstance(body, dict) else None
        emoji = reaction_type.get("emoji_type") if isinstance(reaction_type, dict) else None
        if not isinstance(emoji, str) or not emoji:
            raise _field_error("reaction_type.emoji_type", "is required and must be a string")
        message = self._message(request.match_info["message_id"])
        if emoji not in EMOJI_TYPES:
            raise FeishuApiError(REACTION_TYPE_INVALID, detail=emoji)
        now = self.now()
        reaction = Reaction(
            new_id("ZCaCIjUBVVWSrm5L-", 12),
            message.message_id,
            emoji,
            app_id,
            "app",
            int(now * 1000),
        )
        self.reactions[reaction.reaction_id] = reaction
        self.reactions_log.append(
            ReactionEvent("add", message.message_id, emoji, reaction.reaction_id, now)
        )
        return web.json_response({"code": 0, "msg": "success", "data": reaction.to_api()})

    async def _remove_reaction(self, request: web.Request) -> web.Response:
        app_id = self.authenticate(request)
        message = self._message(request.match_info["message_id"])
        reaction = self.reactions.get(request.match_info["reaction_id"])
        if reaction is None or reaction.message_id != message.message_id:
            raise FeishuApiError(REACTION_NOT_FOUND, detail=request.match_info["reaction_id"])
        if reaction.operator_id != app_id:  # only one's own reaction can be removed
            raise FeishuApiError(REACTION_NOT_FOUND, detail="not added by the caller")
        del self.reactions[reaction.reaction_id]
        self.reactions_log.append(
            ReactionEvent(
                "remove", message.message_id, reaction.emoji_type, reaction.reaction_id, self.now()
            )
        )
        return web.json_response({"code": 0, "msg": "success", "data": reaction.to_api()})

    async def _list_reactions(self, request: web.Request) -> web.Response:
        self.authenticate(request)
        message = self._message(request.match_info["message_id"])
        emoji = request.query.get("reaction_type") or None
        if emoji is not None and emoji not in EMOJI_TYPES:
            raise FeishuApiError(REACTION_TYPE_INVALID, detail=emoji)
        _int_param(request.query, "page_size", 20, 1, 50)
        items = self.reactions_on(message.message_id, emoji)
        page, meta = _paginate(items, request.query, 20, 50)
        data = {**meta, "items": [r.to_api() for r in page]}
        return web.json_response({"code": 0, "msg": "success", "data": data})

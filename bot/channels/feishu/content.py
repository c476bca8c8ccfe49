"""Outbound content: what the outbox holds → the messages Feishu accepts.

Outbox content is platform-neutral: `text` {"text"}, `post` {"title", "paragraphs": [str]}, or
`interactive` {"card": {...}} (a Feishu card as-is), or `card` (a card with buttons:
bot/channels/cards.py, drawn by bot/channels/feishu/action_cards.py). Long text is split below
Feishu's limits (150 KB for text, 30 KB for post and card bodies), at paragraph or line breaks
where it can.
"""

from __future__ import annotations

import json
from typing import Any

from bot.channels.cards import Card, InvalidCard
from bot.channels.feishu.action_cards import card_json

MAX_TEXT_BYTES = 30_000  # far below the 150 KB limit: long messages read better in parts
MAX_POST_BYTES = 28_000  # under the 30 KB request limit, leaving room for the envelope


def split_text(text: str, max_bytes: int = MAX_TEXT_BYTES) -> list[str]:
    parts: list[str] = []
    rest = text
    while len(rest.encode()) > max_bytes:
        cut = _cut_point(rest, max_bytes)
        parts.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip("\n")
    if rest or not parts:
        parts.append(rest)
    return parts


def _cut_point(text: str, max_bytes: int) -> int:
    # The longest prefix within the byte budget, then back off to a natural break.
    lo, hi = 1, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(text[:mid].encode()) <= max_bytes:
            lo = mid
        else:
            hi = mid - 1
    window = text[:lo]
    for sep in ("\n\n", "\n", "。", ". ", " "):
        at = window.rfind(sep)
        if at > lo // 2:
            return at + len(sep)
    return lo


def render(content_type: str, content: dict[str, Any]) -> list[tuple[str, str]]:
    """[(msg_type, content JSON string)], one per Feishu message to send, in order."""
    if content_type == "text":
        return [
            ("text", json.dumps({"text": part}, ensure_ascii=False))
            for part in split_text(str(content.get("text", "")))
        ]
    if content_type == "post":
        title = str(content.get("title", ""))
        paragraphs = [str(p) for p in content.get("paragraphs", [])]
        return [
            ("post", _post_json(title if i == 0 else "", chunk))
            for i, chunk in enumerate(_chunk_paragraphs(paragraphs))
        ]
    if content_type == "interactive":
        card = json.dumps(content.get("card", {}), ensure_ascii=False)
        if len(card.encode()) > MAX_POST_BYTES:
            raise ValueError(f"card is {len(card.encode())} bytes; Feishu accepts 30 KB")
        return [("interactive", card)]
    if content_type == "card":
        try:
            return [("interactive", card_json(Card.from_content(content)))]
        except InvalidCard as exc:
            raise ValueError(str(exc)) from None
    raise ValueError(f"unknown outbox content type {content_type!r}")


def _post_json(title: str, paragraphs: list[str]) -> str:
    body = {
        "zh_cn": {
            "title": title,
            "content": [[{"tag": "text", "text": p}] for p in paragraphs],
        }
    }
    return json.dumps(body, ensure_ascii=False)


def _chunk_paragraphs(paragraphs: list[str]) -> list[list[str]]:
    chunks: list[list[str]] = [[]]
    size = 0
    for paragraph in paragraphs:
        for piece in split_text(paragraph, MAX_POST_BYTES // 2):
            piece_size = len(piece.encode()) + 40
            if chunks[-1] and size + piece_size > MAX_POST_BYTES:
                chunks.append([])
                size = 0
            chunks[-1].append(piece)
            size += piece_size
    return chunks

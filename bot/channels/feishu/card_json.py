"""Feishu card JSON 2.0 built from outbox content (`server-docs/feishu-cards/card-json-v2-
structure`): `{"schema": "2.0", "config", "header", "body": {"elements": [...]}}`.

A `markdown` reply is one card whose body is one markdown component (`{"tag": "markdown",
"content"}`), which in JSON 2.0 renders headings, lists, fenced code with highlighting,
tables and links, where a rich-text post showed a table as pipes and code as plain text.
"""

from __future__ import annotations

from typing import Any

CARD_SCHEMA = "2.0"


def markdown_card(text: str, title: str = "") -> dict[str, Any]:
    """One card showing `text` as Markdown, with `title` as its header if given."""
    card: dict[str, Any] = {
        "schema": CARD_SCHEMA,
        "config": {"width_mode": "fill"},  # a reply reads as wide as the chat, like a message
        "body": {"elements": [{"tag": "markdown", "content": text}]},
    }
    if title:
        card["header"] = {"title": {"tag": "plain_text", "content": title}}
    return card

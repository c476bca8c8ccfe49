"""Cards with buttons as Feishu card JSON 2.0 (https://open.feishu.cn/document/feishu-cards/
card-json-v2-structure): the title in the header, the Markdown in a markdown element, each
button with a callback behavior whose `value` is its action (what `card.action.trigger` brings
back as `event.action.value`), and the note as small text under them.

`config.update_multi` is true: a shared card, which is what JSON 2.0 cards are, and what
PATCH /open-apis/im/v1/messages/:message_id requires before and after an update
(https://open.feishu.cn/document/uAjLw4CM/ukTMukTMukTM/reference/im-v1/message/patch).
"""

from __future__ import annotations

import json
from typing import Any

from bot.channels.cards import Button, Card
from bot.channels.feishu.card_json import markdown_card

# Feishu refuses a card body over 30 KB (message create and patch alike); the request's own
# envelope takes a little of that.
MAX_CARD_BYTES = 28_000


def card_json(card: Card) -> str:
    """The card as the `content` string of an `interactive` message or of a patch."""
    body = markdown_card(card.markdown, card.title)  # the one builder of a card's frame
    body["config"]["update_multi"] = True
    elements: list[dict[str, Any]] = body["body"]["elements"] if card.markdown else []
    if card.buttons:
        elements.append(
            {
                "tag": "column_set",
                "flex_mode": "flow",
                "columns": [
                    {"tag": "column", "width": "auto", "elements": [_button(b)]}
                    for b in card.buttons
                ],
            }
        )
    if card.note:
        elements.append({"tag": "markdown", "content": card.note, "text_size": "notation"})
    body["body"]["elements"] = elements
    text = json.dumps(body, ensure_ascii=False)
    if len(text.encode()) > MAX_CARD_BYTES:
        raise ValueError(f"card is {len(text.encode())} bytes; Feishu accepts 30 KB")
    return text


def _button(button: Button) -> dict[str, Any]:
    return {
        "tag": "button",
        "text": {"tag": "plain_text", "content": button.label},
        "type": button.style,
        "behaviors": [{"type": "callback", "value": dict(button.action)}],
    }

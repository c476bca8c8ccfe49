"""Cards with buttons, platform-neutral: what the Bot writes to the outbox as `card` and
`card_update`, and what every channel renders its own way (Feishu: card JSON 2.0,
bot/channels/feishu/action_cards.py; the console: HTML).

A button's `action` says what a click means, in one of three shapes (docs/design.md, "Cards
and buttons"):

    {"command": "/matters pause 12"}                       a slash command run as the clicker
    {"answer": "Option text", "question": "<outbox key>"}  the clicker's answer to a question
    {"finding": "7", "verdict": "track" | "not_useful"}    the owner's verdict on a finding

A click comes back carrying the action as it was sent, so it is untrusted input: it is read
with `parse_action`, which refuses anything else in one line (the channel answers 400 and
stores nothing). `Card.from_content` reads stored content the same careful way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast

Style = Literal["default", "primary", "danger"]
STYLES: tuple[Style, ...] = ("default", "primary", "danger")
VERDICTS = ("track", "not_useful")
# Bounds: a card is a chat message, not a document, and a click's action comes back from
# outside. Feishu's button text is one short line; its card body is bounded by the 30 KB
# message size (https://open.feishu.cn/document/server-docs/im-v1/message/create).
MAX_BUTTONS = 8
MAX_LABEL = 40
MAX_ACTION_VALUE = 300
MAX_TITLE = 200
MAX_MARKDOWN = 20_000
MAX_NOTE = 500


class InvalidCard(ValueError):
    """Content or a click's action that is not one of ours; the text is the one-line reason."""


def parse_action(raw: Any) -> dict[str, str]:
    """A button's action, checked: exactly one of the three shapes, short string values."""
    if not isinstance(raw, dict) or not raw:
        raise InvalidCard("a button's action must be a non-empty object")
    for key, value in raw.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidCard("a button's action holds only strings")
        if not value.strip() or len(value) > MAX_ACTION_VALUE:
            raise InvalidCard(f"action {key!r} must be 1 to {MAX_ACTION_VALUE} characters")
    action = cast(dict[str, str], dict(raw))
    keys = set(action)
    if keys == {"command"}:
        if not action["command"].startswith("/"):
            raise InvalidCard("a command action must be a slash command")
    elif keys == {"answer", "question"}:
        pass
    elif keys == {"finding", "verdict"}:
        if not action["finding"].isascii() or not action["finding"].isdigit():
            raise InvalidCard("a finding action names a finding by its number")
        if action["verdict"] not in VERDICTS:
            raise InvalidCard(f"a finding's verdict is one of {', '.join(VERDICTS)}")
    else:
        raise InvalidCard(f"not a known action: keys {sorted(keys)}")
    return action


def verdict_buttons(finding_id: int) -> tuple[Button, ...]:
    """Under the message telling the owner a discovery finding (bot/discovery/buttons.py)."""
    return (
        Button("Track as a task", {"finding": str(finding_id), "verdict": "track"}, "primary"),
        Button("Not useful", {"finding": str(finding_id), "verdict": "not_useful"}),
    )


def action_kind(action: dict[str, str]) -> str:
    """'command', 'answer' or 'finding' for an action `parse_action` accepted."""
    for kind in ("command", "answer", "finding"):
        if kind in action:
            return kind
    raise InvalidCard(f"not a known action: keys {sorted(action)}")


@dataclass(frozen=True)
class Button:
    label: str
    action: dict[str, str]
    style: Style = "default"

    def to_content(self) -> dict[str, Any]:
        return {"label": self.label, "style": self.style, "action": dict(self.action)}

    @classmethod
    def from_content(cls, data: Any) -> Button:
        if not isinstance(data, dict):
            raise InvalidCard("a button must be an object")
        label = _text(data.get("label"), "a button's label", MAX_LABEL, required=True)
        style = data.get("style", "default")
        if style not in STYLES:
            raise InvalidCard(f"a button's style is one of {', '.join(STYLES)}")
        return cls(label, parse_action(data.get("action")), cast(Style, style))


@dataclass(frozen=True)
class Card:
    title: str
    markdown: str
    buttons: tuple[Button, ...] = ()
    note: str = ""  # a small line under the buttons: who did what, when

    def to_content(self) -> dict[str, Any]:
        """The outbox's `card` content."""
        return {
            "title": self.title,
            "markdown": self.markdown,
            "buttons": [b.to_content() for b in self.buttons],
            "note": self.note,
        }

    @classmethod
    def from_content(cls, data: Any) -> Card:
        if not isinstance(data, dict):
            raise InvalidCard("a card must be an object")
        buttons = data.get("buttons", [])
        if not isinstance(buttons, list) or len(buttons) > MAX_BUTTONS:
            raise InvalidCard(f"a card has a list of at most {MAX_BUTTONS} buttons")
        return cls(
            title=_text(data.get("title", ""), "a card's title", MAX_TITLE),
            markdown=_text(data.get("markdown", ""), "a card's markdown", MAX_MARKDOWN),
            buttons=tuple(Button.from_content(b) for b in buttons),
            note=_text(data.get("note", ""), "a card's note", MAX_NOTE),
        )


@dataclass(frozen=True)
class CardUpdate:
    """The outbox's `card_update`: the card of a message already sent, redrawn."""

    message_id: str  # the platform's id of the card's message
    card: Card

    def to_content(self) -> dict[str, Any]:
        return {"message_id": self.message_id, "card": self.card.to_content()}

    @classmethod
    def from_content(cls, data: Any) -> CardUpdate:
        if not isinstance(data, dict):
            raise InvalidCard("a card update must be an object")
        message_id = _text(data.get("message_id"), "a card update's message_id", 128, True)
        return cls(message_id, Card.from_content(data.get("card")))


def _text(value: Any, what: str, most: int, required: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidCard(f"{what} must be a string")
    if len(value) > most or (required and not value.strip()):
        raise InvalidCard(f"{what} must be {1 if required else 0} to {most} characters")
    return value

"""What to forget, as `/forget` and `maka forget` say it: one parser for both."""

from __future__ import annotations

from datetime import date, datetime, time, tzinfo

from storage.repos.forgets import Selector

USAGE = (
    "/forget [source NAME] [chat CHAT] [person WHO] [between DAY DAY | from DAY | to DAY] "
    "[confirm] | /forget status (NAME: email, docs, chats:oc_…; CHAT: chat id or name; "
    "WHO: open_id or email address; DAY: YYYY-MM-DD)"
)
FIELDS = ("source", "chat", "person")


def day_start(text: str, tz: tzinfo) -> datetime:
    """The start of DAY in the owner's time zone; ValueError with one line when not a day."""
    try:
        day = date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not a day (YYYY-MM-DD): {text!r}") from None
    return datetime.combine(day, time(), tz)


def selector(
    *,
    source: str | None = None,
    chat: str | None = None,
    person: str | None = None,
    since: str | None = None,
    until: str | None = None,
    tz: tzinfo,
) -> Selector:
    """The selector; `until` is exclusive (`between 2026-01-01 2026-02-01` is January)."""
    start = day_start(since, tz) if since else None
    end = day_start(until, tz) if until else None
    if start and end and end <= start:
        raise ValueError("the range's end must come after its start")
    sel = Selector(source=source, chat=chat, person=person, since=start, until=end)
    if sel.empty:
        raise ValueError("say what to forget: a source, chat, person or date range")
    return sel


def parse_words(words: list[str], tz: tzinfo) -> tuple[Selector, bool]:
    """`/forget`'s arguments → (selector, confirmed); ValueError with one line."""
    found: dict[str, str] = {}
    confirm = False
    rest = list(words)
    while rest:
        word = rest.pop(0).lower()
        if word == "confirm":
            confirm = True
        elif word == "between" and len(rest) >= 2:
            found["since"], found["until"] = rest.pop(0), rest.pop(0)
        elif word in ("from", "to") and rest:
            found["since" if word == "from" else "until"] = rest.pop(0)
        elif word in FIELDS and rest:
            found[word] = rest.pop(0)
        elif word in (*FIELDS, "between", "from", "to"):
            wants = "two days" if word == "between" else "a day" if word in ("from", "to") else ""
            raise ValueError(f"{word!r} needs {wants or 'a value'} after it")
        else:
            raise ValueError(f"unexpected {word!r}")
    return selector(tz=tz, **found), confirm

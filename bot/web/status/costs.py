"""Model costs on the status page: per role today and over 7 days, the conversations that
cost the most, and the fallback model's use. Tokens × MAKA_MODEL_PRICES (per million
tokens), computed from `model_calls`; a model without a price is named, its tokens not
guessed at."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta, tzinfo

from bot.llm.roles import LABEL_ORDER, purpose_of
from bot.llm.settings import ModelSettings
from bot.services import Services
from bot.web.status.items import Item
from storage.repos import model_calls
from storage.repos.model_calls import Spend

WEEK_DAYS = 7
TOP_CONVERSATIONS = 5
NO_PRICES = (
    "no prices set: MAKA_MODEL_PRICES gives each model's price per million tokens, e.g. "
    '{"deepseek-chat": {"input": 0.27, "output": 1.1}}'
)


@dataclass
class _Tally:
    cost: float = 0.0
    calls: int = 0
    fallback_calls: int = 0
    estimated: bool = False  # some of its tokens are estimates (the endpoint reported none)
    unpriced: dict[str, int] = field(default_factory=dict)  # model -> tokens without a price

    def add(self, spend: Spend, settings: ModelSettings) -> None:
        self.calls += spend.calls
        self.fallback_calls += spend.fallback_calls
        self.estimated = self.estimated or spend.estimated_calls > 0
        price = settings.price_of(spend.model)
        if price is None:
            tokens = spend.input_tokens + spend.output_tokens
            if tokens:
                self.unpriced[spend.model] = self.unpriced.get(spend.model, 0) + tokens
            return
        self.cost += price.cost(spend.input_tokens, spend.output_tokens)


def _times(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def money(amount: float, currency: str, *, estimated: bool = False) -> str:
    """`estimated`: part of it is priced from estimated tokens, marked "est." as /status does."""
    shown = f"{amount:.4f} {currency}" if amount < 1 else f"{amount:.2f} {currency}"
    return f"{shown} (est.)" if estimated else shown


def _unpriced(tally: _Tally) -> str:
    if not tally.unpriced:
        return ""
    named = ", ".join(f"{model} ({tokens} tokens)" for model, tokens in tally.unpriced.items())
    return f"; no price for {named}"


def _by_label(spends: list[Spend], settings: ModelSettings) -> dict[str, _Tally]:
    tallies: dict[str, _Tally] = defaultdict(_Tally)
    for spend in spends:
        tallies[purpose_of(spend.key).label].add(spend, settings)
    return tallies


async def cost_items(
    services: Services, tz: tzinfo, now: datetime
) -> tuple[list[Item], list[Item]]:
    """(costs per role and the fallback's use, the top conversations by cost)."""
    settings = services.settings
    today = now.astimezone(tz).date()
    day_start = datetime.combine(today, time(), tz)
    week_start = datetime.combine(today - timedelta(days=WEEK_DAYS - 1), time(), tz)
    async with services.db.read() as tx:
        day = await model_calls.spend_since(tx, day_start)
        week = await model_calls.spend_since(tx, week_start)
        chats = await model_calls.spend_since(tx, week_start, by_conversation=True)
    currency = settings.model_price_currency
    today_by, week_by = _by_label(day, settings), _by_label(week, settings)
    items: list[Item] = []
    if not settings.model_prices:
        items.append(Item(name="prices", state="not set", detail=NO_PRICES))
    for label in LABEL_ORDER:
        if label not in week_by:
            continue
        d, w = today_by.get(label, _Tally()), week_by[label]
        items.append(
            Item(
                name=label,
                state=f"{money(d.cost, currency, estimated=d.estimated)} today",
                detail=f"{money(w.cost, currency, estimated=w.estimated)} in {WEEK_DAYS} days, "
                f"{_times(w.calls, 'call')}" + _unpriced(w),
            )
        )
    items.append(_fallback_item(services, sum(t.fallback_calls for t in today_by.values())))
    return items, _top_conversations(chats, settings, currency)


def _fallback_item(services: Services, used_today: int) -> Item:
    endpoint = services.settings.fallback_endpoint
    if endpoint is None:
        return Item(name="fallback model", state="not set", detail="MAKA_MODEL_FALLBACK_*")
    return Item(
        name="fallback model",
        state=f"used {_times(used_today, 'time')} today",
        detail=endpoint.name,
        red=used_today > 0,
        hint="the primary model failed and the fallback answered: check the primary model "
        "(maka doctor; the log names each failure)"
        if used_today
        else "",
    )


def _top_conversations(spends: list[Spend], settings: ModelSettings, currency: str) -> list[Item]:
    tallies: dict[str, _Tally] = defaultdict(_Tally)
    for spend in spends:
        tallies[spend.key].add(spend, settings)
    ranked = sorted(tallies.items(), key=lambda kv: (-kv[1].cost, -kv[1].calls))
    return [
        Item(
            name=f"conversation {conversation}",
            state=money(tally.cost, currency, estimated=tally.estimated),
            detail=f"{_times(tally.calls, 'call')} in {WEEK_DAYS} days" + _unpriced(tally),
        )
        for conversation, tally in ranked[:TOP_CONVERSATIONS]
    ]

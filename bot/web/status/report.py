"""What the status page shows, gathered in one pass over the database: sources, memory
indexes, Matters, discovery, model usage per day and role, Feishu API usage against its
quota, and outbox health. Every item carries `red` and, when red, a `hint`: what to do.
Nothing here holds a secret value (settings are not read, only counts and states), nor the
owner's words: findings and notices appear by title and `/why` id, never by their text."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, datetime, time, timedelta, tzinfo

from pydantic import BaseModel
from sqlalchemy import select

from bot.discovery.commands import defaults_of
from bot.discovery.delivery import settle_deliveries
from bot.discovery.passes import PURPOSES as DISCOVERY_PURPOSES
from bot.discovery.schedule import start_of_day
from bot.host.backoff import one_line
from bot.llm.roles import ModelRole, purpose_of
from bot.memory.follower import CHECKPOINT_KIND
from bot.memory.indexes.commands import NO_MODEL, STATUS_HELP
from bot.owner.tokens import sign_in_state
from bot.services import Services
from bot.sync.status import load_status
from bot.web.status.actions import action_items
from bot.web.status.attachments import attachment_items
from bot.web.status.costs import cost_items
from bot.web.status.forgets import forget_items
from bot.web.status.items import Item
from bot.web.status.retention import retention_items
from storage.models import ApiUsage, InboxItem, Matter, Session
from storage.repos import discovery as discovery_repo
from storage.repos import inbox, memory_indexes, model_calls, outbox
from storage.types import utcnow

DAYS = 14
UNASKED_SHOWN = 10
PARKED_SHOWN = 10
ERROR_SHOWN = 300


class DayUsage(BaseModel):
    day: date
    tokens: dict[str, int]  # role -> input + output tokens
    calls: int


class ApiDay(BaseModel):
    day: date
    calls: int


class StatusReport(BaseModel):
    generated_at: datetime
    timezone: str
    sources: list[Item]
    indexes: list[Item]
    matters: list[Item]
    discovery: list[Item]
    outbox: list[Item]
    parked: list[Item] = []  # input that failed every try, set aside (newest first)
    attachments: list[Item] = []  # counts by state, and the parked ones
    forgets: list[Item] = []  # the owner's latest forget requests (a parked one red)
    owner: list[Item] = []  # the owner's Feishu sign-in (never a token)
    actions: list[Item] = []  # outward actions: who asked, who approved, what came of it
    unasked: list[Item]  # what the assistant said on its own lately, and why
    model_usage: list[DayUsage]
    costs: list[Item] = []  # per role today and over 7 days; the fallback model's use
    top_conversations: list[Item] = []  # by cost over 7 days
    feishu_api: list[ApiDay]
    feishu_quota: int
    feishu_month_calls: int
    retention: list[Item] = []  # the last prune and the table sizes it measured

    @property
    def red_count(self) -> int:
        groups = (
            self.sources,
            self.indexes,
            self.matters,
            self.discovery,
            self.outbox,
            self.parked,
            self.attachments,
            self.forgets,
            self.owner,
            self.actions,
            self.costs,
            self.retention,
        )
        return sum(1 for group in groups for item in group if item.red)


async def build_report(services: Services) -> StatusReport:
    settings, tz, now = services.settings, services.settings.tz, utcnow()
    api_days, month_calls = await _feishu_api(services, tz, now)
    costs, top_conversations = await cost_items(services, tz, now)
    return StatusReport(
        generated_at=now,
        timezone=settings.timezone,
        sources=await _sources(services, tz),
        indexes=await _indexes(services, tz),
        matters=await _matters(services, tz),
        discovery=await _discovery(services, tz, now),
        outbox=await _outbox(services),
        parked=await _parked(services, tz),
        attachments=await attachment_items(services, tz),
        forgets=await forget_items(services, tz),
        owner=await _owner(services, tz),
        actions=await action_items(services, tz),
        unasked=await _unasked(services, tz),
        model_usage=await _model_usage(services, tz, now),
        costs=costs,
        top_conversations=top_conversations,
        feishu_api=api_days,
        feishu_quota=settings.feishu_api_quota,
        feishu_month_calls=month_calls,
        retention=await retention_items(services, tz),
    )


def _when(at: datetime | None, tz: tzinfo) -> str:
    return at.astimezone(tz).strftime("%Y-%m-%d %H:%M") if at else "never"


def _indexed_through(checkpoint: dict[str, object] | None) -> str:
    """A follower's checkpoint as a person reads it (it was shown as the dict it is stored as)."""
    seq = (checkpoint or {}).get("seq")
    return f"indexed through entry {seq}" if seq else "nothing to index yet"


async def _owner(services: Services, tz: tzinfo) -> list[Item]:
    state = await sign_in_state(services)
    if state.signed_in:
        lasts = _when(state.refresh_expires_at, tz) if state.refresh_expires_at else "unknown"
        return [
            Item(
                name="owner sign-in",
                state=f"signed in; token expires {_when(state.expires_at, tz)}",
                detail=f"sign-in lasts until {lasts}"
                + (
                    f"; last error: {one_line(state.last_error, ERROR_SHOWN)}"
                    if state.last_error
                    else ""
                ),
            )
        ]
    return [
        Item(
            name="owner sign-in",
            state="sign in again" if state.red else "not signed in",
            detail=one_line(state.last_error or "", ERROR_SHOWN),
            red=state.red,
            hint="the owner sends /signin in their direct message with the assistant",
        )
    ]


async def _sources(services: Services, tz: tzinfo) -> list[Item]:
    items = []
    for src in await load_status(services.db):
        red = src.state == "error"
        if src.kind == CHECKPOINT_KIND:  # a search-index follower, not a synced source
            what = "task logs" if "sessions" in src.name else "chat and mail"
            items.append(
                Item(
                    name=f"search index ({what})",
                    state=src.state,
                    detail=_indexed_through(src.synced_cursor)
                    + (f"; last error: {src.last_error}" if src.last_error else ""),
                    red=red,
                    hint="the search backend refused writes: see the error; nothing is lost, it "
                    "retries (or run maka search rebuild)"
                    if red
                    else "",
                )
            )
            continue
        items.append(
            Item(
                name=src.name,
                state=src.state,
                detail=f"{src.records} records; last success {_when(src.last_success_at, tz)}"
                + (f"; cursor {src.synced_cursor}" if src.synced_cursor else "")
                + (f"; last error: {src.last_error}" if src.last_error else "")
                + (f"; {src.stopped} (/sync resume {src.name})" if src.stopped else ""),
                red=red,
                hint="the last sync failed: read the error; fix the credentials or the "
                "network, then /sync (it also retries on its own)"
                if red
                else "",
            )
        )
    return items


async def _indexes(services: Services, tz: tzinfo) -> list[Item]:
    async with services.db.read() as tx:
        rows = await memory_indexes.all_indexes(tx)
    items = []
    for i in rows:
        state = "paused" if i.paused else i.status
        red = state in ("check_failed", "maintenance_failed")
        pending = "unknown" if i.pending_count is None else str(i.pending_count)
        hint = STATUS_HELP.get(state, "") if red else ""
        if not red and services.model_for(ModelRole.INDEXER) is None and not i.paused:
            red, hint = True, NO_MODEL
        items.append(
            Item(
                name=i.name,
                state=state,
                detail=f"covered to rec-{i.covered_cursor}; pending {pending}; last checked "
                f"{_when(i.last_checked_at, tz)}"
                + (f"; last error: {i.last_error}" if i.last_error else ""),
                red=red,
                hint=hint,
            )
        )
    return items


async def _matters(services: Services, tz: tzinfo) -> list[Item]:
    async with services.db.read() as tx:
        rows = (
            await tx.execute(
                select(Matter, Session.name)
                .join(Session, Session.id == Matter.session_id)
                .order_by(Matter.updated_at.desc())
                .limit(30)
            )
        ).all()
    items = []
    for m, name in rows:
        red = m.status in ("paused", "failed") and bool(m.last_error)
        items.append(
            Item(
                name=f"#{m.id} {name}",
                state=m.status,
                detail=f"next wake {_when(m.next_wake_at, tz)}; last settle "
                f"{_when(m.updated_at, tz)}"
                + (f"; waiting for {m.waiting_for}" if m.waiting_for else "")
                + (f"; last error: {m.last_error}" if m.last_error else ""),
                red=red,
                hint=f"the task stopped on an error: read it, then /matters resume {m.id} "
                "(or cancel it)"
                if red
                else "",
            )
        )
    return items


async def _discovery(services: Services, tz: tzinfo, now: datetime) -> list[Item]:
    await settle_deliveries(services.db)  # the counts say what was sent, as of now
    async with services.db.read() as tx:
        state = await discovery_repo.get_state(tx) or discovery_repo.state_of(
            defaults_of(services), now
        )
        rounds = await discovery_repo.recent_rounds(tx, ("done", "failed"), 1)
        skips = await discovery_repo.recent_rounds(tx, ("skipped",), 3)
        used = await model_calls.tokens_since(tx, start_of_day(now, tz), DISCOVERY_PURPOSES)
        counts = await discovery_repo.counts(tx)
    last = rounds[0] if rounds else None
    failed = last is not None and last.phase == "failed"
    spent = used >= state.budget_tokens and state.enabled
    items = [
        Item(
            name="heartbeat",
            state="on" if state.enabled else "off",
            detail=f"every {state.interval_seconds // 60} min; next round "
            f"{_when(state.next_round_at, tz) if state.enabled else 'none'}",
        ),
        Item(
            name="last round",
            state=last.phase if last else "none yet",
            detail=f"{_when(last.started_at, tz)}: {last.reason}" if last else "",
            red=failed,
            hint="the round failed (is the model reachable?); the next beat runs again"
            if failed
            else "",
        ),
        Item(
            name="tokens today",
            state=f"{used} of {state.budget_tokens}",
            red=spent,
            hint="the daily budget is spent: rounds wait for tomorrow, or raise /discovery budget"
            if spent
            else "",
        ),
        Item(
            name="notebook and findings",
            state=f"{counts.notes} notes",
            detail=f"{counts.findings.get('delivered', 0)} findings delivered, "
            f"{counts.findings.get('queued', 0)} queued for the Bot, "
            f"{counts.findings.get('unsent', 0)} not sent, "
            f"{counts.findings.get('repeat', 0)} repeats dropped, {counts.feedback} with "
            "feedback",
        ),
    ]
    if skips:
        items.append(
            Item(
                name="recent skips",
                state=str(len(skips)),
                detail="; ".join(f"{_when(r.started_at, tz)} {r.reason}" for r in skips),
            )
        )
    return items


async def _outbox(services: Services) -> list[Item]:
    async with services.db.read() as tx:
        states = await outbox.count_unfinished(tx)
    hints = {
        "uncertain": "sent, but Feishu's answer was lost: it is retried with the same "
        "idempotency key, so never twice; if it stays, check that Feishu is reachable",
        "failed": "Feishu refused these: read last_error in the outbox table (a permission, "
        "or a chat the bot was removed from)",
    }
    items = [Item(name="pending", state=str(states.get("pending", 0)))]
    for state, hint in hints.items():
        n = states.get(state, 0)
        items.append(Item(name=state, state=str(n), red=n > 0, hint=hint if n else ""))
    return items


async def _parked(services: Services, tz: tzinfo) -> list[Item]:
    """Inbox items parked after failing every try (bot/assistant/failures.py), with why."""
    async with services.db.read() as tx:
        rows = await inbox.parked(tx, PARKED_SHOWN)
    return [
        Item(
            name=f"item {row.id} (conversation {row.conversation_id})",
            state=f"{row.kind}, {row.attempts} tries, parked {_when(row.parked_at, tz)}",
            detail=one_line(row.last_error or "", ERROR_SHOWN),
            red=True,
            hint="it failed every try and was set aside (its chat and the owner were told); "
            "the log has the traceback of its first failure",
        )
        for row in rows
    ]


async def _unasked(services: Services, tz: tzinfo) -> list[Item]:
    """The notices the Bot handled lately (each one is the `/why ID` of what it then sent),
    by title only: what a finding or a notice says is the owner's, read with `/why` in the
    chat it went to."""
    async with services.db.read() as tx:
        rows = await inbox.handled_notices(tx, UNASKED_SHOWN)
    return [Item(name=f"/why {row.id}", state=row.kind, detail=_title(row, tz)) for row in rows]


def _title(item: InboxItem, tz: tzinfo) -> str:
    """At most a title: a finding's number, a task's name; never a text or a mail subject."""
    when = _when(item.created_at, tz)
    if item.kind == "finding":
        return f"discovery finding F-{item.payload.get('finding', '?')}, {when}"
    if item.kind == "task_update":
        task = f"task #{item.payload.get('matter_id', '?')} {item.payload.get('task', '')!r}"
        return f"{task} reported {item.payload.get('update', 'news')}, {when}"
    if item.payload.get("index"):
        return f"memory index {item.payload['index']!r}, {when}"
    return when


async def _model_usage(services: Services, tz: tzinfo, now: datetime) -> list[DayUsage]:
    first = now.astimezone(tz).date() - timedelta(days=DAYS - 1)
    since = datetime.combine(first, time(), tz)
    async with services.db.read() as tx:
        quarters = await model_calls.usage_by_quarter_hour(tx, since)
    tokens: dict[date, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    calls: dict[date, int] = defaultdict(int)
    for q in quarters:
        day = q.start.astimezone(tz).date()
        tokens[day][purpose_of(q.purpose).label] += q.tokens
        calls[day] += q.calls
    days = [first + timedelta(days=n) for n in range(DAYS)]
    return [DayUsage(day=d, tokens=dict(tokens[d]), calls=calls[d]) for d in days]


async def _feishu_api(services: Services, tz: tzinfo, now: datetime) -> tuple[list[ApiDay], int]:
    today = now.astimezone(tz).date()
    first = today - timedelta(days=DAYS - 1)
    month_start = today.replace(day=1)
    async with services.db.read() as tx:
        rows = (
            await tx.execute(
                select(ApiUsage.day, ApiUsage.calls).where(
                    ApiUsage.platform == "feishu", ApiUsage.day >= min(first, month_start)
                )
            )
        ).all()
    per_day: dict[date, int] = defaultdict(int)
    for day, n in rows:
        per_day[day] += int(n)
    month = sum(n for day, n in per_day.items() if day >= month_start)
    days = [first + timedelta(days=n) for n in range(DAYS)]
    return [ApiDay(day=d, calls=per_day[d]) for d in days], month

"""The fault world: a private PostgreSQL cluster, the Feishu and model stand-ins as servers,
`maka migrate`, and two `maka serve` replicas sharing the database; plus what the end checks
read (the database, the Feishu stand-in, the traffic ledger) and the checks themselves.

`fault_world(workdir, replicas=1, database="sqlite")` is the same world on the embedded
default instead: one replica, no `MAKA_DATABASE_URL`, so `maka serve` creates and migrates the
SQLite file in its data dir as it does for most users; the checks read that file.

    async with fault_world(workdir) as world:
        async with world.traffic("x") as traffic:
            await traffic.run(rate=10, seconds=10)  # faults injected meanwhile
            verdict = await world.settle(traffic)  # every delivery done, then quiet
        verdict.assert_clean(world.logs())
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg

from bot.assistant.turn import MODEL_FAILED_REPLY as MODEL_FAILED
from storage.repos.reply_keys import reply_key
from tests.fakes import FeishuEventSender
from tests.faults.feishu import FeishuStandIn
from tests.faults.model import ModelStandIn, answered_token
from tests.faults.postgres import PrivateCluster
from tests.faults.processes import MakaProcess, migrate, serves_webhook
from tests.faults.sqlite import EmbeddedDatabase
from tests.faults.traffic import Traffic, dm_chat

OWNER = "ou_owner"
USERS = tuple(f"ou_fx_user{n}" for n in range(1, 9))
ENCRYPT_KEY = "faults-encrypt-key"
VERIFICATION_TOKEN = "faults-verification-token"
QUIET_TIMEOUT = 120.0
CLAIM_MARGIN = 30.0
SLOW_REPLY = 30.0  # seconds from queued to sent that count as slow
BOT_LEASE_PREFIX = "bot:conversation:"
MAX_REPLIES = 64  # replies one turn may send: reply keys are the turn's key and an ordinal
DATABASES = ("postgresql", "sqlite")
# What reading the database may raise while it is down (or, embedded, not yet created).
DATABASE_ERRORS = (OSError, asyncpg.PostgresError, sqlite3.Error)


async def wait_for(
    predicate: Callable[[], Awaitable[bool]],
    *,
    timeout: float,
    what: str,
    interval: float = 0.1,
    detail: Callable[[], Awaitable[str]] | None = None,
) -> float:
    """Wait until `predicate()`; the seconds it took. Past `timeout`, fail naming `what`."""
    start = time.monotonic()
    try:
        async with asyncio.timeout(timeout):
            while not await predicate():
                await asyncio.sleep(interval)
    except TimeoutError:
        extra = f"\n{await detail()}" if detail is not None else ""
        raise AssertionError(
            f"waited {timeout:.0f}s for {what}; it never happened{extra}"
        ) from None
    return time.monotonic() - start


@dataclass
class Verdict:
    """What the end state says, input by input."""

    inputs: int
    accepted: int  # answered 2xx by a replica
    stored: int  # rows in inbound_events for our inputs
    answers: dict[str, int]  # token -> replies naming it that Feishu shows the user
    apologized: set[str]  # tokens whose turn ended in the "could not answer" reply
    apologies: tuple[int, int]  # (such replies queued, such replies Feishu shows)
    inbox_rows: Counter[str]  # message_id -> inbox items
    outbox_states: Counter[str]
    send_requests: int  # message sends that reached Feishu (resends included)
    resent_uuids: int  # sends repeated under the same uuid (deduplicated by Feishu)
    false_acks: list[str]  # 2xx for an event that is not stored
    undelivered: list[str]  # never answered 2xx at all
    webhook_statuses: Counter[str]
    reply_delays: list[float]  # seconds from queued to sent, per outbox row
    notes: list[str] = field(default_factory=list)

    @property
    def unanswered(self) -> list[str]:
        """Neither answered nor told the model failed."""
        return sorted(t for t, n in self.answers.items() if n == 0 and t not in self.apologized)

    @property
    def doubled(self) -> dict[str, int]:
        return {t: n for t, n in sorted(self.answers.items()) if n > 1}

    @property
    def answered_once(self) -> int:
        return sum(1 for n in self.answers.values() if n == 1)

    @property
    def only_apologized(self) -> int:
        return sum(1 for t, n in self.answers.items() if n == 0 and t in self.apologized)

    @property
    def slow_replies(self) -> int:
        return sum(1 for d in self.reply_delays if d > SLOW_REPLY)

    def problems(self) -> list[str]:
        found: list[str] = []
        if self.undelivered:
            found.append(f"never accepted by any replica: {self.undelivered[:10]}")
        if self.false_acks:
            found.append(f"answered 2xx but not stored: {self.false_acks[:10]}")
        refused = {s: n for s, n in self.webhook_statuses.items() if s.startswith("4")}
        if refused:  # Feishu does not deliver an event again after a 4xx: it would be lost
            found.append(f"webhook answered 4xx to valid events: {refused}")
        if self.stored != self.inputs:
            found.append(f"stored {self.stored} of {self.inputs} inputs")
        if self.unanswered:
            found.append(f"{len(self.unanswered)} never answered: {self.unanswered[:10]}")
        if self.doubled:
            found.append(f"{len(self.doubled)} answered more than once: {self.doubled}")
        extra_inbox = {m: n for m, n in self.inbox_rows.items() if n != 1}
        if extra_inbox:
            found.append(f"inbox items per message not 1: {extra_inbox}")
        unsettled = {s: n for s, n in self.outbox_states.items() if s != "sent"}
        if unsettled:
            found.append(f"outbox rows not sent: {unsettled}")
        if self.apologies[0] != self.apologies[1]:
            found.append(f"'could not answer' replies queued/shown: {self.apologies}")
        return found

    def summary(self) -> str:
        return (
            f"inputs {self.inputs}, accepted {self.accepted}, stored {self.stored}, "
            f"answered once {self.answered_once}, only apologized for {self.only_apologized}, "
            f"never {len(self.unanswered)}, "
            f"doubled {len(self.doubled)}; outbox {dict(self.outbox_states)}; "
            f"Feishu sends {self.send_requests} (resent uuids {self.resent_uuids}); "
            f"webhook answers {dict(self.webhook_statuses)}; "
            f"slowest reply {max(self.reply_delays, default=0.0):.1f}s after it was queued "
            f"({self.slow_replies} over {SLOW_REPLY:.0f}s)"
            + "".join(f"; {note}" for note in self.notes)
        )

    def assert_clean(self, logs: str = "") -> None:
        problems = self.problems()
        assert not problems, "\n".join([self.summary(), *problems, logs])


@dataclass
class FaultWorld:
    database: PrivateCluster | EmbeddedDatabase
    model: ModelStandIn
    feishu: FeishuStandIn
    events: FeishuEventSender
    replicas: list[MakaProcess]
    settings: dict[str, str]
    workdir: Path

    @property
    def cluster(self) -> PrivateCluster:
        """The private PostgreSQL cluster (a world on the embedded database has none)."""
        if not isinstance(self.database, PrivateCluster):
            raise AttributeError("this world runs on the embedded SQLite database")
        return self.database

    @property
    def a(self) -> MakaProcess:
        return self.replicas[0]

    @property
    def b(self) -> MakaProcess:
        return self.replicas[1]

    @property
    def receivers(self) -> list[MakaProcess]:
        """The replicas with a webhook (a `worker` replica has none)."""
        return [r for r in self.replicas if r.has_webhook]

    def traffic(self, prefix: str = "fx", users: tuple[str, ...] = USERS) -> Traffic:
        return Traffic(self.feishu, self.events, self.receivers, users, prefix=prefix)

    def logs(self, lines: int = 40) -> str:
        parts = [r.log_tail(lines) for r in self.replicas]
        if isinstance(self.database, PrivateCluster):
            parts.append(f"---- PostgreSQL log ----\n{self.cluster.log_tail(lines // 2)}")
        return "\n".join(parts)

    # --- the database, read directly -----------------------------------------------------
    async def query(self, sql: str, *args: Any) -> list[Any]:
        """Rows (asyncpg Records, or dicts from the embedded database), read by key."""
        if isinstance(self.database, EmbeddedDatabase):
            return await self.database.query(sql, *args)
        conn = await asyncpg.connect(self.cluster.url, timeout=5)
        try:
            return list(await conn.fetch(sql, *args))
        finally:
            await conn.close()

    async def held_conversation_leases(self) -> list[tuple[str, str]]:
        """(lease name, owner) of every Bot conversation lease not expired."""
        rows = await self.query(
            "SELECT name, owner FROM leases WHERE name LIKE $1 AND expires_at > $2",
            BOT_LEASE_PREFIX + "%",
            datetime.now(UTC),
        )
        return [(r["name"], r["owner"]) for r in rows]

    async def claimed_outbox(self, replica: MakaProcess) -> list[tuple[int, float]]:
        """(row id, seconds until its claim expires) of every reply `replica` has claimed and
        not settled: after a kill, those wait out the sender's lease."""
        rows = await self.query(
            "SELECT id, lease_owner, lease_expires_at FROM outbox"
            " WHERE state = 'pending' AND lease_owner IS NOT NULL"
        )
        now = datetime.now(UTC)
        return [
            (r["id"], (r["lease_expires_at"] - now).total_seconds())
            for r in rows
            if replica.owns(r["lease_owner"])
        ]

    def replica_of(self, owner: str) -> MakaProcess | None:
        return next((r for r in self.replicas if r.owns(owner)), None)

    async def conversation_of(self, chat_id: str) -> int | None:
        rows = await self.query("SELECT id FROM conversations WHERE chat_id = $1", chat_id)
        return int(rows[0]["id"]) if rows else None

    # --- the end ---------------------------------------------------------------------------
    async def quiet(self) -> bool:
        """Nothing left to do: every inbox item handled, every outbox row settled."""
        try:
            [row] = await self.query(
                "SELECT"
                " (SELECT count(*) FROM inbox_items WHERE delivered_at IS NULL"
                "   AND conversation_id IS NOT NULL) AS waiting,"
                " (SELECT count(*) FROM outbox WHERE state = 'pending') AS unsent"
            )
        except DATABASE_ERRORS:
            return False
        return row["waiting"] == 0 and row["unsent"] == 0

    async def pending_detail(self) -> str:
        try:
            rows = await self.query(
                "SELECT id, state, attempts, lease_owner, lease_expires_at, next_attempt_at,"
                " last_error FROM outbox WHERE state <> 'sent' ORDER BY id LIMIT 10"
            )
            waiting = await self.query(
                "SELECT id, conversation_id, created_at FROM inbox_items"
                " WHERE delivered_at IS NULL ORDER BY id LIMIT 10"
            )
            leases = await self.query("SELECT name, owner, expires_at FROM leases")
        except DATABASE_ERRORS as exc:
            return f"(database unreadable: {exc})"
        return (
            f"outbox not sent: {[dict(r) for r in rows]}\n"
            f"inbox waiting: {[dict(r) for r in waiting]}\nleases: {[dict(r) for r in leases]}\n"
            f"{self.logs()}"
        )

    async def wait_quiet(self, timeout: float = QUIET_TIMEOUT) -> float:
        """Wait for `quiet()`. A reply claimed by a sender that died (or lost the database
        mid-send) waits until its claim expires: the deadline stretches to cover every claim
        outstanding, plus `CLAIM_MARGIN`. The seconds it took."""
        start = time.monotonic()
        deadline = start + timeout
        while not await self.quiet():
            expiry = await self._latest_claim_expiry()
            if expiry is not None:
                deadline = max(deadline, time.monotonic() + expiry + CLAIM_MARGIN)
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"waited {time.monotonic() - start:.0f}s for every input handled and every "
                    f"reply settled; it never happened\n{await self.pending_detail()}"
                )
            await asyncio.sleep(0.25)
        return time.monotonic() - start

    async def _latest_claim_expiry(self) -> float | None:
        """Seconds until the last outstanding outbox claim expires (None: none, or unknown)."""
        try:
            [row] = await self.query(
                "SELECT max(lease_expires_at) AS latest FROM outbox WHERE state = 'pending'"
            )
        except DATABASE_ERRORS:
            return None
        latest = row["latest"]
        return (latest - datetime.now(UTC)).total_seconds() if latest is not None else None

    async def verdict(self, traffic: Traffic) -> Verdict:
        by_message = traffic.by_message_id()
        stored_rows = await self.query(
            "SELECT message_id FROM inbound_events WHERE platform = 'feishu'"
        )
        stored = {r["message_id"] for r in stored_rows} & set(by_message)
        inbox_rows = await self.query(
            "SELECT payload->>'message_id' AS message_id, batch_id FROM inbox_items"
            " WHERE kind = 'user_message'"
        )
        inbox_count = Counter(
            str(r["message_id"]) for r in inbox_rows if r["message_id"] in by_message
        )
        for message_id in stored:
            inbox_count.setdefault(message_id, 0)
        outbox_rows = await self.query(
            "SELECT idempotency_key, content->>'text' AS text, state, created_at, sent_at"
            " FROM outbox WHERE content_type NOT IN ('reaction', 'unreaction')"  # replies only
        )
        apology_keys = {r["idempotency_key"] for r in outbox_rows if r["text"] == MODEL_FAILED}
        apologized = {
            by_message[r["message_id"]].token
            for r in inbox_rows
            if r["message_id"] in by_message
            and r["batch_id"]
            and any(reply_key(r["batch_id"], n) in apology_keys for n in range(MAX_REPLIES))
        }
        shown_apologies = sum(1 for m in self.feishu.sent if m.text == MODEL_FAILED)
        answers = dict.fromkeys(traffic.inputs, 0)
        for sent in self.feishu.sent:
            token = answered_token(sent.text or "")
            if token in answers:
                answers[token] += 1
        send_requests = [
            r
            for r in self.feishu.requests
            if r.method == "POST"
            and r.path.startswith("/open-apis/im/v1/messages")
            and not r.path.endswith("/reactions")  # the receipt, not a message
        ]
        uuids = Counter(r.json.get("uuid") for r in send_requests if isinstance(r.json, dict))
        false_acks = sorted(
            item.token
            for item in traffic.inputs.values()
            if any(a.ok for a in item.attempts) and item.message_id not in stored
        )
        return Verdict(
            inputs=len(traffic.inputs),
            accepted=sum(1 for i in traffic.inputs.values() if i.accepted_at is not None),
            stored=len(stored),
            answers=answers,
            apologized=apologized,
            apologies=(len(apology_keys), shown_apologies),
            inbox_rows=inbox_count,
            outbox_states=Counter(r["state"] for r in outbox_rows),
            send_requests=len(send_requests),
            resent_uuids=sum(n - 1 for u, n in uuids.items() if u and n > 1),
            false_acks=false_acks,
            undelivered=traffic.undelivered(),
            webhook_statuses=traffic.statuses(),
            reply_delays=[
                (r["sent_at"] - r["created_at"]).total_seconds()
                for r in outbox_rows
                if r["sent_at"] is not None
            ],
        )

    def answer_delays(self, traffic: Traffic, *, since: float) -> dict[str, float]:
        """Per answered input: seconds from `since` (or from its acceptance, if later) to the
        first answer Feishu created for it."""
        first: dict[str, float] = {}
        for sent in self.feishu.sent:
            token = answered_token(sent.text or "")
            at = self.feishu.created_at.get(sent.message_id)
            if token in traffic.inputs and at is not None:
                first[token] = min(first.get(token, at), at)
        return {
            token: at - max(since, traffic.inputs[token].accepted_at or since)
            for token, at in first.items()
        }

    async def settle(self, traffic: Traffic, timeout: float = QUIET_TIMEOUT) -> Verdict:
        """Wait for every delivery and then for quiet; the verdict."""
        await traffic.drain()
        await self.wait_quiet(timeout)
        return await self.verdict(traffic)


def world_settings(
    cluster: PrivateCluster | None,
    feishu: FeishuStandIn,
    model: ModelStandIn,
    app: tuple[str, str],
) -> dict[str, str]:
    """The replicas' settings; with no cluster, no MAKA_DATABASE_URL: the embedded default."""
    app_id, app_secret = app
    database = {"MAKA_DATABASE_URL": cluster.url} if cluster is not None else {}
    return {
        **database,
        "MAKA_FEISHU_APP_ID": app_id,
        "MAKA_FEISHU_APP_SECRET": app_secret,
        "MAKA_FEISHU_ENCRYPT_KEY": ENCRYPT_KEY,
        "MAKA_FEISHU_VERIFICATION_TOKEN": VERIFICATION_TOKEN,
        "MAKA_FEISHU_DOMAIN": feishu.url,
        "MAKA_MODEL_BASE_URL": model.base_url,
        "MAKA_MODEL_API_KEY": model.api_key,
        "MAKA_MODEL_NAME": "fake-model",
        "MAKA_MODEL_TIMEOUT": "5",
        "MAKA_OWNER": OWNER,
        "MAKA_OPEN_DMS": "true",  # DMs from several users, all answered by the model
        "MAKA_CONSOLE": "false",
        "MAKA_SHUTDOWN_GRACE": "5",
        "MAKA_LOG_LEVEL": "INFO",
    }


@asynccontextmanager
async def fault_world(
    workdir: Path,
    replicas: int = 2,
    *,
    database: str = "postgresql",
    extra_settings: dict[str, str] | None = None,
    roles: Sequence[str] | None = None,
) -> AsyncIterator[FaultWorld]:
    """The world on a private PostgreSQL cluster, or (`database="sqlite"`, one replica) on
    the embedded SQLite default. `extra_settings` (MAKA_* variables) are added to the
    replicas' settings, over the world's own (benchmarks/conversations.py passes the Bot's).
    `roles`, one per replica, are their `maka serve --role` (default: all); events go to the
    replicas with a webhook."""
    if database not in DATABASES:
        raise ValueError(f"database {database!r}: one of {', '.join(DATABASES)}")
    if database == "sqlite" and replicas != 1:
        raise ValueError("the embedded SQLite database runs one replica")
    roles = list(roles or ["all"] * replicas)
    if len(roles) != replicas or not any(serves_webhook(r) for r in roles):
        raise ValueError(f"roles {roles}: one per replica, and one with a webhook")
    model = ModelStandIn()
    feishu = FeishuStandIn(bot_open_id="ou_bot", bot_name="Maka")
    async with AsyncExitStack() as stack:
        cluster: PrivateCluster | None = None
        if database == "postgresql":
            cluster = await stack.enter_async_context(PrivateCluster())
        await stack.enter_async_context(model)
        await stack.enter_async_context(feishu)
        for user in (OWNER, *USERS):
            feishu.add_chat(dm_chat(user), name="", chat_type="p2p", p2p_user=user)
        app = feishu.new_app()
        settings = {**world_settings(cluster, feishu, model, app), **(extra_settings or {})}
        if cluster is not None:  # `maka serve` migrates the embedded database itself
            await migrate(settings, workdir / "migrate.log")
        processes = [
            MakaProcess(name, settings, workdir, role)
            for name, role in zip("ab"[:replicas], roles, strict=True)
        ]
        db: PrivateCluster | EmbeddedDatabase = (
            cluster
            if cluster is not None
            else EmbeddedDatabase(Path(processes[0].settings["MAKA_DATA_DIR"]) / "maka.db")
        )
        events = FeishuEventSender(
            next(p for p in processes if p.has_webhook).webhook,
            app_id=app[0],
            encrypt_key=ENCRYPT_KEY,
            verification_token=VERIFICATION_TOKEN,
        )
        world = FaultWorld(db, model, feishu, events, processes, settings, workdir)
        try:
            await asyncio.gather(*(p.start() for p in processes))
            yield world
        finally:
            await asyncio.gather(*(p.stop() for p in processes), return_exceptions=True)

"""Feishu API calls per answered message: what a free tenant's monthly quota pays for each
answer, under each configuration in CONFIGS (issue #39: the receipt reactions cost calls).

    feishu_quota.py [--quick] [--messages N]

The service runs in this process against the loopback Feishu fake (tests/fakes), on a SQLite
file in a temporary directory, with an instant scripted model that answers every message with
one `send_user` and ends its turn. N people each send one DM through the signed webhook; once
every answer is out and every outbox row settled, the fake's recorded API calls since the
first message (tokens, messages, reactions: everything the quota counts) are divided by the
answers. "before" is the receipt off; every other configuration is reported against it.
Add a configuration to CONFIGS (e.g. progress cards, once `MAKA_PROGRESS_CARDS` exists) and
it is measured and reported the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for tests.apps and tests.fakes

from _summary import emit  # noqa: E402
from sqlalchemy import func, select  # noqa: E402

from bot.assistant.component import Assistant  # noqa: E402
from bot.llm.scripted import PlannedReply, ScriptedProvider  # noqa: E402
from bot.llm.types import Message, ToolSpec  # noqa: E402
from storage.models import InboxItem, OutboxMessage  # noqa: E402
from storage.repos.outbox import PENDING  # noqa: E402
from tests.apps import make_settings, running_app  # noqa: E402
from tests.fakes import FeishuEventSender, FeishuFake, HistoryMessage  # noqa: E402
from tests.waiting import wait_until  # noqa: E402

BENCHMARK = "feishu_quota"
ENCRYPT_KEY, TOKEN = "bench-encrypt-key", "bench-verification-token"
SETTLE_TIMEOUT = 300.0  # seconds for every answer once the messages are in


@dataclass(frozen=True)
class Config:
    name: str
    settings: dict[str, Any] = field(default_factory=dict)  # MAKA_ settings, as keywords


# The first is the baseline the others are reported against.
CONFIGS = [
    Config("before (receipt off)", {"feishu_receipt": False}),
    Config("after (receipt on)", {"feishu_receipt": True}),
]


@dataclass(frozen=True)
class Measured:
    config: Config
    answered: int
    calls: Counter[str]  # "METHOD path-kind" -> count
    seconds: float

    @property
    def per_answer(self) -> float:
        return sum(self.calls.values()) / self.answered


def _answer(messages: list[Message], tools: list[ToolSpec]) -> PlannedReply:
    """One `send_user`, then (given its result) `sleep`: steps of concurrent turns interleave,
    so each step reads where its own turn is."""
    if messages and messages[-1].role == "tool":
        return ScriptedProvider.tool_call("sleep", {})
    return ScriptedProvider.tool_call("send_user", {"text": "pong"})


def _kind(method: str, path: str) -> str:
    if path.endswith("/reactions") or "/reactions/" in path:
        return f"{method} reaction"
    if path.startswith("/open-apis/im/v1/messages"):
        return f"{method} message"
    return f"{method} {path}"


async def measure(config: Config, people: int, workdir: Path) -> Measured:
    async with FeishuFake(bot_open_id="ou_bot", bot_name="Maka") as fake:
        app_id, secret = fake.new_app()
        users = [f"ou_quota_{n:04d}" for n in range(people)]
        for user in users:
            fake.add_chat(f"oc_{user}", name="", chat_type="p2p", p2p_user=user)
        model = ScriptedProvider([_answer] * (2 * people))
        settings = make_settings(
            workdir,
            f"sqlite:///{workdir / 'maka.db'}",
            feishu_app_id=app_id,
            feishu_app_secret=secret,
            feishu_encrypt_key=ENCRYPT_KEY,
            feishu_verification_token=TOKEN,
            feishu_domain=fake.url,
            open_dms=True,
            bot_debounce=0.0,
            **config.settings,
        )
        async with running_app(settings, bot=Assistant(), model_provider=model) as app:
            events = FeishuEventSender(
                f"{app.url}/feishu/events",
                app_id=app_id,
                encrypt_key=ENCRYPT_KEY,
                verification_token=TOKEN,
            )
            first = len(fake.requests)
            started = time.perf_counter()
            for user in users:
                event = events.message_event(text="ping", chat_id=f"oc_{user}", sender_open_id=user)
                message = event["event"]["message"]
                fake.add_history(
                    message["chat_id"],
                    [
                        HistoryMessage.text(
                            "ping",
                            create_time=time.time(),
                            sender_open_id=user,
                            message_id=message["message_id"],
                        )
                    ],
                )
                status, body = await events.post(event)
                if status != 200:
                    raise SystemExit(f"the webhook answered {status}: {body}")

            async def settled() -> bool:
                if len(fake.sent) < people:
                    return False
                async with app.services.db.read() as tx:
                    waiting = await tx.scalar(
                        select(func.count(InboxItem.id)).where(InboxItem.delivered_at.is_(None))
                    )
                    pending = await tx.scalar(
                        select(func.count(OutboxMessage.id)).where(OutboxMessage.state == PENDING)
                    )
                return not waiting and not pending

            await wait_until(settled, SETTLE_TIMEOUT, what=f"{people} answers ({config.name})")
            seconds = time.perf_counter() - started
            calls = Counter(_kind(r.method, r.path) for r in fake.requests[first:])
            return Measured(config, len(fake.sent), calls, seconds)


async def run(args: argparse.Namespace) -> int:
    people = args.messages or (20 if args.quick else 200)
    results: list[Measured] = []
    for config in CONFIGS:
        with tempfile.TemporaryDirectory(prefix="maka-quota-") as tmp:
            results.append(await measure(config, people, Path(tmp)))
    print(f"\nFeishu API calls per answered message ({people} DMs, one answer each)\n")
    print("| configuration | answered | calls | per answer | by kind | seconds |")
    print("|---|---|---|---|---|---|")
    for m in results:
        kinds = ", ".join(f"{kind}: {n}" for kind, n in sorted(m.calls.items()))
        print(
            f"| {m.config.name} | {m.answered} | {sum(m.calls.values())} | "
            f"{m.per_answer:.2f} | {kinds} | {m.seconds:.1f} |"
        )
    print(flush=True)
    baseline = results[0]
    for m in results[1:]:
        emit(
            BENCHMARK,
            f"API calls per answered message, {m.config.name}",
            m.per_answer,
            baseline.per_answer,
            unit="calls",
            better="lower",
            baseline_what=baseline.config.name,
        )
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a smoke check: 20 messages")
    parser.add_argument("--messages", type=int, help="people, one DM each (default 200)")
    return parser.parse_args(argv)


def main() -> int:
    try:
        return asyncio.run(run(parse_args()))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""Hostile files sent to a running service, run by hand: `.venv/bin/python
benchmarks/hostile_messages.py` (`make bench` runs it). Issue #40's promise: ten hostile files
each end in one line, the next message is answered within 2 s, idle RSS stays at most 200 MB.

One real `maka serve` on the embedded defaults (SQLite, tantivy, no model) in webhook mode
against the loopback Feishu fake (tests/fakes), served from this process. The owner sends
`/help` (answered without a model) and the time to its answer at the fake is taken: the
baseline. Then the owner sends the ten hostile files of tests/attachments/hostile.py as file
messages (their bytes downloadable at the fake); once every attachment row is final (read from
the service's SQLite file), each one's state and line is printed, and `/help` is timed again,
then, after `--idle` seconds, the resident memory of the service and its children (the
extraction children are gone by then) is taken. Exits 1 when the service does not start, a
file does not end in one line, or an answer does not come; the figures are only reported.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for tests.fakes and tests.attachments

from _summary import emit  # noqa: E402
from footprint import MAKA, embedded_env, free_port, ready, rss_kb  # noqa: E402

from tests.attachments.hostile import HOSTILE  # noqa: E402
from tests.fakes import FeishuEventSender, FeishuFake, HistoryMessage  # noqa: E402

OWNER = "ou_owner"
CHAT = "oc_owner_dm"
VERIFICATION_TOKEN = "hostile-verification-token"
READY_TIMEOUT = 90.0
ANSWER_TIMEOUT = 60.0
FILES_TIMEOUT = 300.0


async def post(
    events: FeishuEventSender,
    fake: FeishuFake,
    resource: tuple[str, bytes] | None = None,
    **message: object,
) -> None:
    """A message from the owner, as Feishu holds it (and `resource`'s bytes downloadable)."""
    event = events.message_event(chat_id=CHAT, chat_type="p2p", sender_open_id=OWNER, **message)
    msg = event["event"]["message"]
    if resource is not None:
        fake.attach_resource(msg["message_id"], *resource)
    fake.add_history(
        CHAT,
        [
            HistoryMessage(
                msg["message_id"],
                CHAT,
                msg["content"],
                msg_type=msg["message_type"],
                create_time_ms=int(msg["create_time"]),
                sender_id=OWNER,
            )
        ],
    )
    status, body = await events.post(event)
    if status != 200:
        raise RuntimeError(f"the webhook answered {status}: {body}")


async def time_help(events: FeishuEventSender, fake: FeishuFake) -> float:
    """Seconds from posting `/help` to its answer at the fake."""
    before = len(fake.sent)
    started = time.monotonic()
    await post(events, fake, text="/help")
    while not any("/status" in (m.text or m.content) for m in fake.sent[before:]):
        if time.monotonic() - started > ANSWER_TIMEOUT:
            raise RuntimeError("no answer to /help")
        await asyncio.sleep(0.01)
    return time.monotonic() - started


def attachment_rows(db: Path) -> list[tuple[str, str, str | None]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
        rows = conn.execute("SELECT name, state, error FROM attachments ORDER BY id").fetchall()
    return [(str(n), str(s), e) for n, s, e in rows]


async def run(idle: float) -> int:
    async with FeishuFake(bot_open_id="ou_bot", bot_name="Maka") as fake:
        fake.add_chat(CHAT, name="owner dm", chat_type="p2p", p2p_user=OWNER)
        app_id, secret = fake.new_app()
        with tempfile.TemporaryDirectory() as data, tempfile.TemporaryFile() as log:
            port = free_port()
            env = {
                **embedded_env(data, port),
                "MAKA_OWNER": OWNER,
                "MAKA_FEISHU_APP_ID": app_id,
                "MAKA_FEISHU_APP_SECRET": secret,
                "MAKA_FEISHU_VERIFICATION_TOKEN": VERIFICATION_TOKEN,
                "MAKA_FEISHU_DOMAIN": fake.url,
                "MAKA_FEISHU_MODE": "webhook",
            }
            proc = await asyncio.create_subprocess_exec(
                str(MAKA), "serve", env=env, stdout=subprocess.DEVNULL, stderr=log
            )
            try:
                return await measure(fake, proc, port, app_id, Path(data) / "maka.db", idle, log)
            finally:
                if proc.returncode is None:
                    proc.terminate()
                await asyncio.wait_for(proc.wait(), 30)


async def measure(
    fake: FeishuFake,
    proc: asyncio.subprocess.Process,
    port: int,
    app_id: str,
    db: Path,
    idle: float,
    log: object,
) -> int:
    del log  # kept open by the caller for the service's stderr
    started = time.monotonic()
    while not await asyncio.to_thread(ready, port):
        if proc.returncode is not None or time.monotonic() - started > READY_TIMEOUT:
            print("maka serve did not become ready", file=sys.stderr)
            return 1
        await asyncio.sleep(0.2)
    events = FeishuEventSender(
        f"http://127.0.0.1:{port}/feishu/events",
        app_id=app_id,
        encrypt_key=None,
        verification_token=VERIFICATION_TOKEN,
    )
    baseline = await time_help(events, fake)
    rss_before = rss_kb(proc.pid)
    files_started = time.monotonic()
    for n, hostile in enumerate(HOSTILE):
        key = f"file_v3_hostile_{n}"
        content = {"file_key": key, "file_name": hostile.name}
        await post(events, fake, (key, hostile.make()), message_type="file", content=content)
    while True:
        rows = attachment_rows(db)
        if len(rows) == len(HOSTILE) and all(s in ("done", "failed", "parked") for _, s, _ in rows):
            break
        if time.monotonic() - files_started > FILES_TIMEOUT:
            print(f"files not final after {FILES_TIMEOUT:.0f} s: {rows}", file=sys.stderr)
            return 1
        await asyncio.sleep(0.1)
    files_seconds = time.monotonic() - files_started
    after = await time_help(events, fake)
    await asyncio.sleep(idle)
    rss_idle = rss_kb(proc.pid)
    bad = 0
    print("| file | state | line |")
    print("|---|---|---|")
    for (name, state, error), hostile in zip(rows, HOSTILE, strict=True):
        line = error or "(read)"
        one_line = state == "done" or (
            error is not None and error.startswith("could not read: ") and "\n" not in error
        )
        bad += not one_line
        print(f"| {hostile.label} (`{name}`) | {state} | {line} |")
    print()
    print(f"all ten final after {files_seconds:.1f} s")
    print("| figure | value |\n|---|---|")
    print(f"| /help answered, before the files | {baseline:.2f} s |")
    print(f"| /help answered, after the files | {after:.2f} s (target at most 2 s) |")
    print(f"| RSS before the files | {rss_before / 1024:.0f} MB |")
    print(f"| RSS idle {idle:.0f} s after | {rss_idle / 1024:.0f} MB (target at most 200 MB) |")
    emit(
        "hostile_messages",
        "next message answered after ten hostile files",
        round(after, 3),
        round(baseline, 3),
        unit="s",
        better="lower",
        baseline_what="the same, before them",
    )
    emit(
        "hostile_messages",
        "idle RSS after ten hostile files",
        round(rss_idle / 1024),
        round(rss_before / 1024),
        unit="MB",
        better="lower",
        baseline_what="before them",
    )
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--idle", type=float, default=10.0, help="seconds idle before RSS")
    parser.add_argument("--quick", action="store_true", help="idle 2 s")
    args = parser.parse_args()
    return asyncio.run(run(2.0 if args.quick else args.idle))


if __name__ == "__main__":
    sys.exit(main())

"""No secret value is ever printed or served. The real `maka` CLI runs with distinctive secrets in
its environment, in the cases that print the most: bad or unreachable databases, every check of
`maka doctor` failing, and a whole service at DEBUG answering HTTP and a `/status` command."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest

from bot.config import load_settings
from tests.fakes import FeishuEventSender, FeishuFake, HistoryMessage
from tests.seed import OWNER

MAKA = [sys.executable, "-m", "bot.cli.main"]
CLOSED = "127.0.0.1:1"  # nothing listens there: connections are refused at once
APP_ID = "cli_secrets_test"
SECRETS = {
    "MAKA_FEISHU_APP_SECRET": "appsecret-Kq4m9xT",
    "MAKA_FEISHU_ENCRYPT_KEY": "encryptkey-Vb7n2wR",
    "MAKA_FEISHU_VERIFICATION_TOKEN": "verifytoken-Hs3p8zL",
    "MAKA_MODEL_API_KEY": "sk-modelkey-Jd6f1qP",
    "MAKA_MODEL_FALLBACK_API_KEY": "sk-fallbackkey-Lm3s8aZ",
    "MAKA_MODEL_SUMMARY_API_KEY": "sk-summarykey-Qe7d2cV",
    "MAKA_MEILI_KEY": "meilikey-Wc5t0yN",
    "MAKA_EMAIL_PASSWORD": "mailpass-Gx2r7uM",
    "MAKA_SMTP_PASSWORD": "smtppass-Rw4j6hE",
    "MAKA_ADMIN_TOKEN": "admintoken-Fz9e4kB",
    "MAKA_SECRET_KEY": "secretkey-Pn5c8vD",
}
DB_PASSWORD = "dbpass-Ty8w3iQ"
MALFORMED_URL = f"postgresql://maka:{DB_PASSWORD}@db.internal:five432/maka"  # port: no number
UNSUPPORTED_URL = f"mysql://maka:{DB_PASSWORD}@db.internal/maka"
UNREACHABLE_URL = f"postgresql://maka:{DB_PASSWORD}@{CLOSED}/maka"
UNREACHABLE_SHOWN = f"cannot reach the database postgresql://maka:***@{CLOSED}/maka: "
DEADLINE = 60.0  # seconds any one wait may take (a loaded machine imports slowly)


def assert_no_secret(text: str, where: str) -> None:
    values = {**SECRETS, "the database password": DB_PASSWORD}
    leaked = [name for name, value in values.items() if value in text]
    assert not leaked, f"{where} shows {leaked}:\n{text}"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """Every secret set, and every service the secrets are for pointing at a closed port."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKA_")}
    env.update(SECRETS)
    env.update(
        MAKA_DATA_DIR=str(tmp_path / "data"),
        MAKA_FEISHU_APP_ID=APP_ID,
        MAKA_FEISHU_DOMAIN=f"http://{CLOSED}",
        MAKA_MODEL_BASE_URL=f"http://{CLOSED}/v1",
        MAKA_MODEL_NAME="some-model",
        MAKA_MODEL_SUMMARY_BASE_URL=f"http://{CLOSED}/summary/v1",
        MAKA_MODEL_FALLBACK_NAME="spare-model",
        MAKA_EMAIL_HOST="127.0.0.1",
        MAKA_EMAIL_PORT="1",
        MAKA_EMAIL_SECURITY="none",
        MAKA_EMAIL_USER="maka",
        MAKA_SMTP_HOST="127.0.0.1",
        MAKA_SMTP_PORT="1",
        MAKA_SMTP_TLS="none",
        MAKA_SMTP_USERNAME="maka",
        MAKA_SMTP_FROM="maka@example.com",
    )
    env.update(extra)
    return env


async def _run(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Exit code and everything printed (stdout and stderr)."""
    proc = await asyncio.create_subprocess_exec(
        *MAKA, *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), DEADLINE)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError(
            f"`maka {' '.join(args)}` still running after {DEADLINE:.0f}s"
        ) from None
    assert proc.returncode is not None
    return proc.returncode, out.decode()


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


# Each: arguments, MAKA_DATABASE_URL, and the start of the one line printed.
FAILURES: dict[str, tuple[list[str], str, str]] = {
    "serve, malformed url": (["serve"], MALFORMED_URL, "MAKA_DATABASE_URL: not a database URL"),
    "doctor, malformed url": (
        ["doctor"],
        MALFORMED_URL,
        "FAIL  settings: MAKA_DATABASE_URL: not a database URL",
    ),
    "migrate, unsupported url": (
        ["migrate"],
        UNSUPPORTED_URL,
        "MAKA_DATABASE_URL: unsupported database 'mysql'",
    ),
    "serve, memory database": (
        ["serve"],
        "sqlite:///:memory:",
        "MAKA_DATABASE_URL: a memory SQLite database is lost when the service stops",
    ),
    "serve, unreachable": (["serve"], UNREACHABLE_URL, UNREACHABLE_SHOWN),
    "migrate, unreachable": (["migrate"], UNREACHABLE_URL, UNREACHABLE_SHOWN),
    "sync status, unreachable": (["sync", "status"], UNREACHABLE_URL, UNREACHABLE_SHOWN),
}


async def test_a_bad_or_unreachable_database_is_one_line_without_its_password(
    tmp_path: Path,
) -> None:
    runs = await asyncio.gather(
        *(_run(args, _env(tmp_path, MAKA_DATABASE_URL=url)) for args, url, _ in FAILURES.values())
    )
    for (case, (_, _, first)), (code, out) in zip(FAILURES.items(), runs, strict=True):
        assert_no_secret(out, case)
        assert code != 0, f"{case}: exit 0\n{out}"
        lines = _lines(out)
        assert len(lines) == 1 and lines[0].startswith(first), f"{case}:\n{out}"
    masked = dict(zip(FAILURES, runs, strict=True))["migrate, unsupported url"][1]
    assert "mysql://maka:***@db.internal/maka" in masked  # shown, with the password masked


async def test_doctor_fails_every_check_in_a_line_each_without_a_secret(tmp_path: Path) -> None:
    env = _env(
        tmp_path,
        MAKA_DATABASE_URL=UNREACHABLE_URL,
        MAKA_SEARCH_BACKEND="meilisearch",
        MAKA_MEILI_URL=f"http://{CLOSED}",
        MAKA_PUBLIC_URL="https://maka.example.com",  # sign-in on: its check reads the database
        MAKA_OWNER="ou_owner",
    )
    code, out = await _run(["doctor"], env)
    assert_no_secret(out, "maka doctor")
    assert code == 1, out
    lines = _lines(out)
    assert [line.split()[:2] for line in lines] == [
        ["FAIL", "database:"],
        ["FAIL", "search:"],
        ["FAIL", "feishu:"],
        ["FAIL", "model:"],
        ["ok", "model-roles:"],  # which model each role uses: asks no server, cannot fail
        ["FAIL", "owner-signin:"],
        ["FAIL", "smtp:"],
    ], out
    assert lines[0].startswith("FAIL  database: " + UNREACHABLE_SHOWN), out
    assert f"http://{CLOSED}/v1" in lines[3]  # the model endpoint that refused


async def test_a_running_service_prints_and_serves_no_secret(tmp_path: Path) -> None:
    """`maka serve` at DEBUG on SQLite with a (fake) Feishu app: health, metrics, a refused
    and an accepted webhook, the owner's `/status` and `/sync email` (refused by the IMAP
    port), then SIGTERM."""
    async with FeishuFake() as fake:
        fake.add_app(APP_ID, SECRETS["MAKA_FEISHU_APP_SECRET"])
        fake.add_chat("oc_owner_dm", name="owner dm", chat_type="p2p", p2p_user=OWNER)
        port = _free_port()
        env = _env(
            tmp_path,
            MAKA_HTTP_PORT=str(port),
            MAKA_LOG_LEVEL="DEBUG",
            MAKA_FEISHU_DOMAIN=fake.url,
            MAKA_OWNER=OWNER,
            MAKA_POLL_INTERVAL="0.1",
            MAKA_BOT_DEBOUNCE="0",
            MAKA_SHUTDOWN_GRACE="2",
        )
        proc = await asyncio.create_subprocess_exec(
            *MAKA,
            "serve",
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            limit=2**22,  # DEBUG lines can be long
        )
        printed: list[str] = []
        reader = asyncio.create_task(_collect(proc, printed))  # drained as it comes
        base = f"http://127.0.0.1:{port}"
        bodies: dict[str, str] = {}
        try:
            async with aiohttp.ClientSession() as http:
                await _until(lambda: _answers(http, f"{base}/healthz"), "/healthz answers", proc)
                for path in ("/healthz", "/readyz", "/metrics"):
                    async with http.get(base + path) as resp:
                        bodies[path] = f"{resp.status} {await resp.text()}"
                assert bodies["/metrics"].startswith("200 ") and "maka_" in bodies["/metrics"]

                webhook = f"{base}/feishu/events"
                forged = FeishuEventSender(
                    webhook, app_id=APP_ID, encrypt_key=None, verification_token="guess"
                )
                status, body = await forged.post(forged.message_event(text="hi"), http=http)
                bodies["forged webhook"] = body
                assert status == 401, body

                sender = FeishuEventSender(
                    webhook,
                    app_id=APP_ID,
                    encrypt_key=SECRETS["MAKA_FEISHU_ENCRYPT_KEY"],
                    verification_token=SECRETS["MAKA_FEISHU_VERIFICATION_TOKEN"],
                )
                for n, command in enumerate(["/status", "/sync email"], start=1):
                    status, body = await sender.post(_owner_says(fake, sender, command), http=http)
                    bodies[f"webhook {command}"] = body
                    assert status == 200, body

                    async def replied(n: int = n) -> bool:
                        return len(fake.sent) >= n

                    await _until(replied, f"the reply to {command}", proc)
                    bodies[f"{command} reply"] = fake.sent[n - 1].content
                assert "workers:" in bodies["/status reply"]

                async def email_failed() -> bool:
                    return any("email" in line and "failed" in line for line in printed)

                await _until(email_failed, "a failed email sync in the log", proc)
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), DEADLINE)
            await asyncio.wait_for(reader, DEADLINE)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    out = "".join(printed)
    assert_no_secret(out, "maka serve's output")
    for where, body in bodies.items():
        assert_no_secret(body, where)
    assert proc.returncode == 0, out
    assert " DEBUG " in out and "draining" in out  # it did print at DEBUG, then drained


def test_settings_never_show_a_secret_in_their_repr(tmp_path: Path) -> None:
    settings = load_settings(
        data_dir=tmp_path,
        database_url=f"postgresql://maka:{DB_PASSWORD}@db.internal/maka",
        **{name.removeprefix("MAKA_").lower(): value for name, value in SECRETS.items()},
        feishu_app_id=APP_ID,
    )
    assert_no_secret(repr(settings), "repr(settings)")
    assert_no_secret(str(settings), "str(settings)")
    assert settings.feishu_app_secret is not None
    assert settings.feishu_app_secret.get_secret_value() == SECRETS["MAKA_FEISHU_APP_SECRET"]


def _owner_says(fake: FeishuFake, sender: FeishuEventSender, text: str) -> dict[str, object]:
    """A message event from the owner's DM, also stored at the fake (so the reply finds it)."""
    event = sender.message_event(text=text, chat_id="oc_owner_dm", sender_open_id=OWNER)
    message = event["event"]["message"]
    fake.add_history(
        "oc_owner_dm",
        [
            HistoryMessage.text(
                text,
                create_time=int(message["create_time"]) / 1000,
                sender_open_id=OWNER,
                message_id=message["message_id"],
            )
        ],
    )
    return event


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def _collect(proc: asyncio.subprocess.Process, lines: list[str]) -> None:
    assert proc.stdout is not None
    async for line in proc.stdout:
        lines.append(line.decode(errors="replace"))


async def _answers(http: aiohttp.ClientSession, url: str) -> bool:
    try:
        async with http.get(url) as resp:
            return resp.status == 200
    except aiohttp.ClientConnectionError:
        return False


async def _until(
    condition: Callable[[], Awaitable[bool]], what: str, proc: asyncio.subprocess.Process
) -> None:
    deadline = time.monotonic() + DEADLINE
    while not await condition():
        if proc.returncode is not None:
            pytest.fail(f"maka serve exited ({proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {DEADLINE:.0f}s")
        await asyncio.sleep(0.1)

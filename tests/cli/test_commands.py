"""The `maka` command as operators run it: real subprocesses."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from datetime import timedelta
from pathlib import Path

import aiohttp
import pytest

from bot.cli.main import build_parser
from bot.config import LogLevel, load_settings
from storage.db import create_database
from storage.migrate import current_revision, head_revision, migrate
from storage.models import OutboxMessage
from storage.types import utcnow

MAKA = [sys.executable, "-m", "bot.cli.main"]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKA_")}
    env["MAKA_DATA_DIR"] = str(tmp_path / "data")
    env.update(extra)
    return env


async def _run(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *MAKA, *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError(f"`maka {' '.join(args)}` still running after 60s") from None
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_doctor_names_a_nonsense_database_url_in_one_line(tmp_path: Path) -> None:
    code, out, err = await _run(["doctor"], _env(tmp_path, MAKA_DATABASE_URL="nonsense"))
    assert code != 0
    lines = [line for line in (out + err).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    # not echoed: a value that is no URL could be anything, a password among it
    assert "MAKA_DATABASE_URL: not a database URL" in lines[0] and "nonsense" not in lines[0]


async def test_doctor_fails_on_an_unreachable_database(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    url = f"postgresql://postgres@127.0.0.1:{port}/test"
    code, out, _ = await _run(["doctor"], _env(tmp_path, MAKA_DATABASE_URL=url))
    assert code == 1
    database_line = next(line for line in out.splitlines() if "database:" in line)
    assert database_line.startswith("FAIL") and str(port) in database_line


async def test_doctor_passes_on_embedded_defaults(tmp_path: Path) -> None:
    code, out, _ = await _run(["doctor"], _env(tmp_path))
    assert code == 0, out
    assert {line.split()[1] for line in out.splitlines()} == {
        "database:",
        "search:",
        "feishu:",
        "model:",
        "model-roles:",
        "owner-signin:",
        "smtp:",
    }


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("MAKA_HTTP_PORT", "eighty"),
        ("MAKA_LOG_LEVEL", "LOUD"),
        ("MAKA_TASK_ARCHIVE_AFTER", "a month"),
        ("MAKA_TASK_ARCHIVE_AFTER", "inf"),
        # infinite, or past their Integer columns: /discovery or /index create failed on them
        ("MAKA_DISCOVERY_BUDGET", "99999999999999999999"),
        ("MAKA_DISCOVERY_INTERVAL", "inf"),
        ("MAKA_INDEX_INTERVAL", "1e12"),
        # a price list that is not JSON: no costs would be shown, silently
        ("MAKA_MODEL_PRICES", '{"deepseek-chat": 0.27'),
        # fewer days than a redelivered event is known as a duplicate
        ("MAKA_RETENTION_INBOX_DAYS", "3"),
    ],
)
async def test_a_wrong_setting_stops_start_up_with_one_line(
    tmp_path: Path, variable: str, value: str
) -> None:
    code, _, err = await _run(["serve"], _env(tmp_path, **{variable: value}))
    assert code != 0
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"{variable}:"), lines
    assert value in lines[0], lines


async def test_a_data_dir_that_cannot_be_made_is_named_by_serve_and_by_doctor(
    tmp_path: Path,
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    env = {**_env(tmp_path), "MAKA_DATA_DIR": str(a_file / "data")}
    code, out, err = await _run(["serve"], env)
    lines = [line for line in (out + err).splitlines() if line.strip()]
    assert code != 0 and len(lines) == 1, lines
    assert lines[0].endswith(f"cannot make its folder {a_file / 'data'}: Not a directory"), lines
    code, out, _ = await _run(["doctor"], env)
    database_line = next(line for line in out.splitlines() if "database:" in line)
    assert code == 1
    assert database_line.startswith("FAIL") and f"{a_file} is not a folder" in database_line


async def test_a_taken_port_stops_serve_in_one_line_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = await _run(["serve"], _env(tmp_path, MAKA_HTTP_PORT=str(port)))
    lines = [line for line in (out + err).splitlines() if line.strip()]
    assert code == 1 and lines == [
        f"MAKA_HTTP_HOST/MAKA_HTTP_PORT: cannot listen on 127.0.0.1:{port}: the port is taken "
        "(another `maka serve`?)"
    ], lines  # and nothing else: the service did not start ("maka started" is logged)


def test_the_log_level_is_read_in_any_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAKA_LOG_LEVEL", " debug ")
    assert load_settings().log_level is LogLevel.DEBUG


async def test_serve_answers_healthz_and_drains_on_sigterm(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = await asyncio.create_subprocess_exec(
        *MAKA,
        "serve",
        env=_env(tmp_path, MAKA_HTTP_PORT=str(port)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with aiohttp.ClientSession() as http:
            status = await _poll_healthz(http, f"http://127.0.0.1:{port}/healthz")
        assert status == 200
        assert (tmp_path / "data" / "maka.db").exists()  # SQLite, migrated on start
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 0, err.decode()
        assert "draining" in err.decode()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def _poll_healthz(http: aiohttp.ClientSession, url: str) -> int:
    async with asyncio.timeout(60):
        while True:
            try:
                async with http.get(url) as resp:
                    return resp.status
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.1)


async def test_doctor_checks_the_model_endpoint(tmp_path: Path) -> None:
    from tests.fakes.openai_server import FakeOpenAIServer

    async with FakeOpenAIServer() as server:
        env = _env(
            tmp_path,
            MAKA_MODEL_BASE_URL=server.base_url,
            MAKA_MODEL_API_KEY=server.api_key,
            MAKA_MODEL_NAME="fake-model",
        )
        server.reply_tool_calls([("report_ready", {"ready": True})])  # doctor's probe
        code, out, _ = await _run(["doctor"], env)
        assert code == 0, out
        bad_key = {**env, "MAKA_MODEL_API_KEY": "wrong"}
        code, out, _ = await _run(["doctor"], bad_key)
    assert code == 1
    assert next(line for line in out.splitlines() if "model:" in line).startswith("FAIL")


async def test_doctor_checks_meilisearch_with_the_search_services_own_health(
    tmp_path: Path,
) -> None:
    from tests.fakes.meilisearch import FakeMeilisearch

    with FakeMeilisearch(master_key="the-key") as meili:
        env = _env(tmp_path, MAKA_SEARCH_BACKEND="meilisearch", MAKA_MEILI_URL=meili.url,
                   MAKA_MEILI_KEY="the-key")  # fmt: skip
        code, out, _ = await _run(["doctor"], env)
        search = next(line for line in out.splitlines() if "search:" in line)
        assert code == 0 and search.startswith("ok"), out
        code, out, _ = await _run(["doctor"], {**env, "MAKA_MEILI_KEY": "wrong"})
        search = next(line for line in out.splitlines() if "search:" in line)
        assert code == 1 and search.startswith("FAIL"), out  # /health alone would pass
    code, out, _ = await _run(["doctor"], env)  # the server is gone
    search = next(line for line in out.splitlines() if "search:" in line)
    assert code == 1 and search.startswith("FAIL") and meili.url in search, out


async def test_read_commands_create_and_migrate_nothing(tmp_path: Path) -> None:
    """`maka sync status`, `maka index list|show` and `maka doctor` only read: on a fresh data
    dir they say there is no database yet and leave none behind; on an old schema they say
    what to run and leave it as it was."""
    env = _env(tmp_path)
    database = tmp_path / "data" / "maka.db"
    for args in (["sync", "status"], ["index", "list"], ["index", "show", "people"]):
        code, out, err = await _run(args, env)
        assert code == 1, (args, out, err)
        assert err.strip() == f"no database at {database} yet: `maka serve` creates it", args
    code, out, _ = await _run(["doctor"], env)
    assert code == 0 and f"database: no database at {database} yet" in out, out
    assert not database.exists()

    db = create_database(f"sqlite+aiosqlite:///{database}")
    try:
        await migrate(db, "0010")
    finally:
        await db.dispose()
    for args in (["sync", "status"], ["index", "list"]):
        code, _, err = await _run(args, env)
        assert code == 1 and err.strip() == (
            f"database schema is at 0010, this version needs {head_revision()}: "
            "`maka serve` migrates it"
        ), (args, err)
    db = create_database(f"sqlite+aiosqlite:///{database}")
    try:
        assert await current_revision(db) == "0010"
    finally:
        await db.dispose()


@pytest.mark.parametrize(
    ("limit", "error"), [("²", "'²' is not a whole number"), ("5000", "5000: from 1 to 1000")]
)
def test_a_search_limit_is_a_bounded_whole_number(
    capsys: pytest.CaptureFixture[str], limit: str, error: str
) -> None:
    assert build_parser().parse_args(["search", "x", "--limit", "7"]).limit == 7
    with pytest.raises(SystemExit):
        build_parser().parse_args(["search", "x", "--limit", limit])
    said = capsys.readouterr().err.splitlines()[-1]
    assert said == f"maka search: error: argument --limit: {error}"


async def test_serve_without_tesseract_starts_and_says_in_one_line_that_ocr_is_off(
    tmp_path: Path,
) -> None:
    from bot.attachments.extract import OCR_OFF_LINE

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    nothing = tmp_path / "empty-path"
    nothing.mkdir()
    proc = await asyncio.create_subprocess_exec(
        *MAKA,
        "serve",
        env=_env(tmp_path, MAKA_HTTP_PORT=str(port), PATH=str(nothing)),  # no tesseract on it
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with aiohttp.ClientSession() as http:
            status = await _poll_healthz(http, f"http://127.0.0.1:{port}/healthz")
        assert status == 200
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
        assert [line for line in err.decode().splitlines() if OCR_OFF_LINE in line] != [], err
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_prune_dry_run_counts_and_prune_removes_per_table(tmp_path: Path) -> None:
    db = create_database(f"sqlite+aiosqlite:///{tmp_path / 'data' / 'maka.db'}")
    try:
        await migrate(db)
        long_ago = utcnow() - timedelta(days=40)
        async with db.write() as tx:
            tx.add(
                OutboxMessage(
                    idempotency_key="k",
                    platform="feishu",
                    chat_id="oc_1",
                    content_type="text",
                    content={"text": "hi"},
                    state="sent",
                    created_at=long_ago,
                    next_attempt_at=long_ago,
                )
            )
    finally:
        await db.dispose()
    env = _env(tmp_path)
    code, out, err = await _run(["prune", "--dry-run"], env)
    assert code == 0, err
    assert "outbox: would remove 1 (keeps 30 days, 1 rows now)" in out.splitlines(), out
    assert "model_calls: would remove 0 (keeps 90 days, 0 rows now)" in out.splitlines(), out
    code, out, err = await _run(["prune"], env)
    assert code == 0, err
    assert "outbox: removed 1 (keeps 30 days, 0 rows now)" in out.splitlines(), out
    code, out, _ = await _run(["prune", "--dry-run"], {**env, "MAKA_RETENTION_OUTBOX_DAYS": "0"})
    assert code == 0 and "outbox: would remove 0 (kept forever, 0 rows now)" in out, out

"""Files made to hurt a reader each end in one "could not read: …" line; the sandbox kills a
child that runs out of time or memory; the test process stays healthy throughout."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import sys
from pathlib import Path

import pytest

from bot.attachments.extract import ExtractLimits, extract, sandbox
from bot.attachments.extract.result import Extraction
from bot.host.children import end_child
from tests.attachments import files
from tests.attachments.hostile import HOSTILE, Hostile, declared_million_cells_xlsx
from tests.waiting import wait_until

LIMITS = ExtractLimits()


@pytest.mark.parametrize("hostile", HOSTILE, ids=[hostile.label for hostile in HOSTILE])
async def test_a_hostile_file_ends_in_one_line(hostile: Hostile) -> None:
    extraction = await extract(hostile.make(), name=hostile.name, limits=LIMITS)
    if hostile.name.endswith(".xlsx"):
        return  # the one that is read: its own test below
    assert extraction.error is not None
    assert extraction.error.startswith("could not read: ")
    assert hostile.expect in extraction.error
    assert "\n" not in extraction.error
    assert extraction.text == ""


async def test_after_every_hostile_file_the_next_file_is_still_read() -> None:
    for hostile in HOSTILE:
        await extract(hostile.make(), name=hostile.name, limits=LIMITS)
    extraction = await extract(files.pdf("stillhere"), name="a.pdf", limits=LIMITS)
    assert extraction.text == "stillhere"


async def test_a_spreadsheet_declaring_a_million_rows_is_read_by_its_real_cells() -> None:
    import openpyxl

    data = declared_million_cells_xlsx()
    declared = openpyxl.load_workbook(io.BytesIO(data), read_only=True).worksheets[0]
    assert (declared.max_row, declared.max_column) == (1_048_576, 16_384)  # it is hostile
    extraction = await extract(data, name="sheet.xlsx", limits=LIMITS)
    assert extraction.error is None
    assert "dimensionword\t42" in extraction.text  # the last row: every row was read
    assert extraction.detail == "1 sheet"  # not "stopped after 2,000,000 cells"


async def test_a_child_that_runs_past_its_time_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAKA_EXTRACT_DEBUG", "spin")
    extraction = await extract(b"some text", name="a.txt", limits=ExtractLimits(seconds=0.5))
    assert extraction.error == "could not read: took longer than 0.5 s"
    assert extraction.kind == "text"  # sniffed before the child was started
    assert _my_extraction_children() == []


async def test_a_child_that_needs_too_much_memory_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MAKA_EXTRACT_DEBUG", "eat")
    extraction = await extract(b"some text", name="a.txt", limits=ExtractLimits(memory_mb=256))
    assert extraction.error == "could not read: needs more than 256 MB"


async def test_a_child_that_answers_without_end_is_cut_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MAKA_EXTRACT_DEBUG", "flood")
    extraction = await extract(b"some text", name="a.txt", limits=ExtractLimits(max_chars=1000))
    assert extraction.error == "could not read: the reader answered too much"
    assert _my_extraction_children() == []


async def test_a_cancelled_extraction_kills_its_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAKA_EXTRACT_DEBUG", "spin")
    task = asyncio.create_task(extract(b"x", name="a.txt", limits=ExtractLimits(seconds=60)))

    async def child_started() -> bool:
        return bool(_my_extraction_children())

    await wait_until(child_started, what="the extraction child to start")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _my_extraction_children() == []


async def test_the_child_does_not_get_the_services_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MAKA_EXTRACT_DEBUG", "spin")
    monkeypatch.setenv("MAKA_MODEL_API_KEY", "sk-not-for-file-readers")
    task = asyncio.create_task(extract(b"x", name="a.txt", limits=ExtractLimits(seconds=60)))

    async def child_started() -> bool:
        return bool(_my_extraction_children())

    try:
        await wait_until(child_started, what="the extraction child to start")
        (child,) = _my_extraction_children()
        environment = _environment(child)
        assert b"MAKA_EXTRACT_DEBUG=spin" in environment  # it is the child we think
        assert not [entry for entry in environment if entry.startswith(b"MAKA_MODEL_API_KEY")]
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_no_more_than_the_allowed_extractions_run_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    running = 0
    most = 0
    release = asyncio.Event()

    async def held_child(path: Path, name: str, limits: ExtractLimits, kind: str) -> Extraction:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await release.wait()
        running -= 1
        return Extraction(kind="text", text="ok", detail="", error=None)

    monkeypatch.setattr(sandbox, "_run_child", held_child)
    limits = ExtractLimits(concurrency=2)
    tasks = [asyncio.create_task(extract(b"x", name="a.txt", limits=limits)) for _ in range(6)]

    async def two_running() -> bool:
        return running == 2

    await wait_until(two_running, what="two extractions to be running")
    for _ in range(20):  # let every other task reach the gate
        await asyncio.sleep(0)
    assert running == 2
    release.set()
    results = await asyncio.gather(*tasks)
    assert [result.text for result in results] == ["ok"] * 6
    assert most == 2


def _environment(pid: int) -> list[bytes]:
    return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")


def _my_extraction_children() -> list[int]:
    """Live (not zombie) processes of ours running the extraction child."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, parent = fields[0], int(fields[1])
        if parent == os.getpid() and state != "Z" and b"extract.child" in command:
            found.append(int(entry.name))
    return found


async def test_a_killed_child_whose_pipe_is_full_and_unread_is_reaped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A flood stops being read at the cap; asyncio then pauses the pipe with its buffer full,
    and wait() alone never returns (it waits for every pipe to close). Ending the child reads
    the pipes to their end, so it returns."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import sys, time\nsys.stdout.write('x' * 4_000_000)\nsys.stdout.flush()\ntime.sleep(600)",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    assert child.stdout is not None

    async def paused() -> bool:  # the transport stopped reading: its buffer passed its limit
        return len(child.stdout._buffer) >= 2 * 64 * 1024  # type: ignore[union-attr]

    await wait_until(paused, what="the child's unread output to fill the pipe's buffer")
    async with asyncio.timeout(60):  # a backstop with a message, not a speed target
        try:
            await end_child(child, group=True)
        except TimeoutError:
            raise AssertionError("ending the flooding child hung") from None
    assert child.returncode == -signal.SIGKILL
    assert "did not close" not in caplog.text  # reaped, not given up on after END_SECONDS
    assert child.stdout.at_eof()

"""Fixtures of the fault suite: one whole fault world (private PostgreSQL, Feishu and model
stand-ins, two `maka serve` replicas) per test. Skipped, with the reason, where there are no
PostgreSQL server binaries.

Each test works in its own directory under the system temp dir (not pytest's `tmp_path`,
which a concurrent pytest run may prune): the replicas' logs stay there when the test fails,
and the directory is removed otherwise."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Generator
from pathlib import Path

import pytest

from tests.faults.harness import FaultWorld, fault_world
from tests.faults.postgres import PostgresMissing, find_bin_dir

OUTCOME = pytest.StashKey[pytest.TestReport]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[OUTCOME] = report
    return report


@pytest.fixture
def workdir(request: pytest.FixtureRequest) -> Generator[Path, None, None]:
    path = Path(tempfile.mkdtemp(prefix=f"maka-faults-{request.node.name[:40]}-"))
    yield path
    report = request.node.stash.get(OUTCOME, None)
    if report is not None and not report.failed:  # passed, or failed as expected (xfail)
        shutil.rmtree(path, ignore_errors=True)
    else:
        print(f"\nfault suite: logs kept in {path}")


@pytest.fixture
async def world(workdir: Path) -> AsyncIterator[FaultWorld]:
    try:
        find_bin_dir()
    except PostgresMissing as exc:
        pytest.skip(f"fault suite: {exc}")
    async with fault_world(workdir) as running:
        yield running

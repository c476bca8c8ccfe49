"""The layer contracts (`.importlinter`, checked by `make lint`) catch a forbidden import.

Each case copies the packages and the contracts to a temporary directory, adds one import
that breaks one contract, and runs `lint-imports` there: it must fail and name the contract.
The untouched copy must pass. See docs/design.md, "Layers".
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bot", "sources", "storage")
CONFIG = ".importlinter"


def _lint_imports() -> str:
    script = Path(sys.executable).with_name("lint-imports")
    found = str(script) if script.exists() else shutil.which("lint-imports")
    if found is None:
        pytest.fail("lint-imports is not installed: pip install -e '.[test]'")
    return found


def _copy_tree(dest: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, dest / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / CONFIG, dest / CONFIG)
    return dest


def _run(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tree)  # the copy, not the installed project
    return subprocess.run(
        [_lint_imports(), "--no-cache", "--no-logo", str(tree / CONFIG)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _add_import(tree: Path, module: str, statement: str) -> None:
    path = tree / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = tree / module.replace(".", "/") / "__init__.py"
    path.write_text(path.read_text() + f"\n{statement}  # added by tests/test_layers.py\n")


def test_the_tree_as_it_is_keeps_every_contract(tmp_path: Path) -> None:
    result = _run(_copy_tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "statement", "contract"),
    [
        ("storage.types", "import bot.assistant", "storage and sources know nothing of bot"),
        ("sources.base", "import bot.config", "storage and sources know nothing of bot"),
        (
            "bot.channels.messages",
            "from bot.assistant import visibility",
            "channels deliver and never decide",
        ),
        ("bot.agent.loop", "import bot.workhub.router", "the agent loop is generic"),
        ("bot.llm.types", "import bot.agent.tools", "the model client knows no tools"),
        ("bot.host.workers", "import bot.matters.worker", "the Host runs the workers it is handed"),
        (
            "bot.matters.rules",
            "from storage.repos import outbox",
            "only the Bot writes to the outbox",
        ),
        ("bot.memory.recall", "import storage.repos.outbox", "only the Bot writes to the outbox"),
    ],
)
def test_a_forbidden_import_breaks_its_contract(
    tmp_path: Path, module: str, statement: str, contract: str
) -> None:
    tree = _copy_tree(tmp_path)
    _add_import(tree, module, statement)
    result = _run(tree)
    assert result.returncode != 0, result.stdout
    assert f"{contract} BROKEN" in result.stdout, result.stdout + result.stderr
    # the added import is in the report (low modules may break other contracts too)
    assert f"{module} -> " in result.stdout, result.stdout

"""The Dockerfile and the chart agree (no Docker daemon here: the file is read, not built)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from tests.helm.chart import chart

ROOT = Path(__file__).resolve().parents[2]


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the final stage, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    parsed = [tuple(line.split(None, 1)) for line in lines if line and not line.startswith("#")]
    stages = [i for i, p in enumerate(parsed) if p[0].upper() == "FROM"]
    return [(p[0].upper(), p[1] if len(p) > 1 else "") for p in parsed[stages[-1] :]]


def last(name: str) -> str:
    values = [args for instruction, args in instructions() if instruction == name]
    assert values, f"no {name} in the final stage"
    return values[-1]


def test_the_image_runs_maka_serve_as_the_charts_non_root_user() -> None:
    args = {a.split("=")[0]: a.split("=")[1] for i, a in instructions() if i == "ARG" and "=" in a}
    user = last("USER")
    for name, value in args.items():
        user = user.replace("${" + name + "}", value)
    uid, gid = (int(part) for part in user.split(":"))
    assert uid != 0 and gid != 0
    pod = chart().values["podSecurityContext"]
    assert (pod["runAsUser"], pod["runAsGroup"]) == (uid, gid)
    assert json.loads(last("ENTRYPOINT")) == ["maka"]
    assert json.loads(last("CMD")) == ["serve"]
    env = last("ENV")
    for setting in ("PYTHONDONTWRITEBYTECODE=1", "MAKA_HTTP_HOST=0.0.0.0", "MAKA_DATA_DIR=/data"):
        assert setting in env


def test_the_image_is_a_slim_python_that_the_project_supports() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert "ARG PYTHON_IMAGE=python:3.11-slim" in dockerfile
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert requires["requires-python"] == ">=3.11"


def test_every_package_is_copied_into_the_image_and_nothing_else() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    packages = {p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    copied = {
        source
        for line in dockerfile.splitlines()
        if line.startswith("COPY ") and "--from" not in line
        for source in line.split()[1:-1]
    }
    assert copied == packages | {"pyproject.toml", "README.md"}  # the readme is package metadata
    lines = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    ignored = {line.strip() for line in lines if line.strip() and not line.startswith("#")}
    assert {".git", ".venv", ".maka", "tests", "helm"} <= ignored
    assert not ignored & (packages | {"pyproject.toml", "README.md"})

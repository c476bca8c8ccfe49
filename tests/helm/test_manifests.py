"""The chart lints strictly and every object it renders is valid Kubernetes 1.30."""

from __future__ import annotations

import re
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.helm.chart import CHART_DIR, CONFIGS, KUBE_VERSION, lint, render


@pytest.mark.parametrize("config", CONFIGS)
def test_strict_lint_finds_no_warning_or_error(config: str) -> None:
    report = lint(CONFIGS[config])
    assert report["total_charts_linted"] == 1
    assert report["errors"] == []
    # Severity: 1 info ("icon is recommended" and the like), 2 warning, 3 error.
    serious = [m for m in report["messages"] if m["severity"] >= 2]
    assert serious == []


@pytest.mark.parametrize("config", CONFIGS)
def test_every_rendered_object_validates_against_the_kubernetes_schemas(config: str) -> None:
    rendered = render(CONFIGS[config])
    assert rendered.objects
    problems: list[str] = []
    for obj in rendered.objects:
        where = f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
        try:
            # strict: unknown fields are refused too (a misspelt key would be silently dropped
            # by the API server otherwise).
            kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            path = ".".join(str(p) for p in exc.path)
            problems.append(f"{where}: {path}: {exc.message}")
        except kubernetes_validate.SchemaNotFoundError as exc:
            problems.append(f"{where}: {exc.message}")
    assert problems == []


def test_validation_really_rejects_a_broken_object() -> None:
    """Guards the test above: the schemas are strict and refuse what the API server would."""
    deployment: dict[str, Any] = render().deployments()["all"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["livenessProbe"]["httpGet"]["paht"] = "/healthz"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBE_VERSION, strict=True)


@pytest.mark.parametrize("config", CONFIGS)
def test_names_are_unique_and_fit_in_a_label(config: str) -> None:
    rendered = render(CONFIGS[config])
    names = rendered.names()
    assert len(names) == len(set(names))
    for obj in rendered.objects:
        assert obj["metadata"].get("namespace") is None  # helm --namespace decides
        assert len(obj["metadata"]["name"]) <= 63


def readme_values() -> list[dict[str, Any]]:
    """The values files the README's "Deploy on Kubernetes" section shows."""
    readme = (CHART_DIR.parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Deploy on Kubernetes", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, flags=re.DOTALL)
    return [yaml.safe_load(block) for block in blocks]


def test_the_readme_examples_install() -> None:
    examples = readme_values()
    assert len(examples) == 2
    for values in examples:
        assert lint(values)["errors"] == []
        for obj in render(values).objects:
            kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)

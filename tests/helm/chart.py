"""Render the chart with the real Helm engine (helm-python-sdk, in process, offline) and hand the
objects back as dictionaries; named value sets the tests share."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

CHART_DIR = Path(__file__).resolve().parents[2] / "helm" / "maka-assistant"
KUBE_VERSION = "1.30.0"
RELEASE = "maka"
NAMESPACE = "assistant"
FULLNAME = "maka-maka-assistant"

SECRET_SETTINGS = (
    "MAKA_FEISHU_APP_SECRET",
    "MAKA_FEISHU_ENCRYPT_KEY",
    "MAKA_FEISHU_VERIFICATION_TOKEN",
    "MAKA_MODEL_API_KEY",
    "MAKA_DATABASE_URL",
    "MAKA_MEILI_KEY",
    "MAKA_EMAIL_PASSWORD",
    "MAKA_SMTP_PASSWORD",
)

Obj = dict[str, Any]

EXTERNAL_DB = {
    "database": {"backend": "postgresql", "url": "postgresql://maka:db-pass-7f3a@pg.db:5432/maka"},
    "search": {
        "backend": "meilisearch",
        "meiliUrl": "http://meili.search:7700",
        "meiliKey": "meili-key-5c1e",
    },
}

# Named value sets: each must lint cleanly and validate against the Kubernetes schemas.
CONFIGS: dict[str, Obj] = {
    "default": {},
    "split-external": {"topology": "split", **EXTERNAL_DB},
    "split-external-existing-secret-hpa-ingress": {
        "topology": "split",
        "existingSecret": "maka-credentials",
        "database": {"backend": "postgresql"},
        "search": {"backend": "meilisearch", "meiliUrl": "http://meili.search:7700"},
        "web": {"autoscaling": {"enabled": True}},
        "ingress": {
            "enabled": True,
            "className": "nginx",
            "host": "maka.example.com",
            "tls": [{"secretName": "maka-tls", "hosts": ["maka.example.com"]}],
        },
        "imagePullSecrets": [{"name": "registry"}],
        "serviceAccountName": "maka",
    },
    "all-scaled-ws": {
        "all": {"replicas": 3},
        "feishu": {"mode": "ws", "appId": "cli_a1b2"},
        **EXTERNAL_DB,
    },
    "split-bundled": {
        "topology": "split",
        "database": {"backend": "postgresql"},
        "search": {"backend": "meilisearch"},
        "postgresql": {"enabled": True, "auth": {"password": "pg-pass-0123456789"}},
        "meilisearch": {"enabled": True, "masterKey": "master-key-0123456789abcdef"},
    },
    "scheduling-and-extras": {
        "nodeSelector": {"kubernetes.io/arch": "amd64"},
        "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}},
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "maka-assistant"}},
            }
        ],
        "priorityClassName": "important",
        "podAnnotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "8080"},
        "podLabels": {"team": "assistant"},
        "settings": {"extra": {"MAKA_CONTEXT_TOKENS": 12000, "MAKA_INDEX_TOOL_OUTPUT": True}},
    },
    "sqlite-no-persistence-no-pdb": {
        "persistence": {"enabled": False},
        "podDisruptionBudget": {"enabled": False},
    },
}


@dataclass(frozen=True)
class Rendered:
    objects: list[Obj]
    notes: str

    def of_kind(self, kind: str) -> list[Obj]:
        return [o for o in self.objects if o["kind"] == kind]

    def get(self, kind: str, name: str) -> Obj:
        found = [o for o in self.of_kind(kind) if o["metadata"]["name"] == name]
        assert len(found) == 1, f"{kind}/{name}: found {len(found)} in {self.names()}"
        return found[0]

    def names(self) -> list[str]:
        return sorted(f"{o['kind']}/{o['metadata']['name']}" for o in self.objects)

    def deployments(self) -> dict[str, Obj]:
        """Deployments by role (the app.kubernetes.io/component label)."""
        return {
            d["metadata"]["labels"]["app.kubernetes.io/component"]: d
            for d in self.of_kind("Deployment")
        }

    def configmap(self) -> dict[str, str]:
        data: dict[str, str] = self.get("ConfigMap", FULLNAME)["data"]
        return data


@functools.cache
def chart() -> helm.Chart:
    return helm.Chart.load(CHART_DIR)


def render(values: Obj | None = None) -> Rendered:
    manifests = chart().render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    objects: list[Obj] = []
    notes = ""
    for path, text in sorted(manifests.items()):
        if path.endswith("NOTES.txt"):
            notes = text
            continue
        for doc in yaml.safe_load_all(text):
            if doc is None:
                continue
            assert isinstance(doc, dict), f"{path}: not an object: {doc!r}"
            objects.append(doc)
    return Rendered(objects, notes)


def lint(values: Obj | None = None) -> dict[str, Any]:
    return helm.lint(CHART_DIR, values, strict=True, kube_version=f"v{KUBE_VERSION}")


def pod_spec(obj: Obj) -> Obj:
    spec: Obj = obj["spec"]["template"]["spec"] if obj["kind"] != "Pod" else obj["spec"]
    return spec


def containers(obj: Obj) -> Iterator[Obj]:
    spec = pod_spec(obj)
    yield from spec.get("initContainers", [])
    yield from spec["containers"]


def env_of(container: Obj) -> dict[str, Obj]:
    return {e["name"]: e for e in container.get("env", [])}


def hook_events(obj: Obj) -> set[str]:
    hook = obj["metadata"].get("annotations", {}).get("helm.sh/hook", "")
    return {event for event in hook.split(",") if event}

"""values.schema.json refuses values that cannot work, before anything reaches a cluster."""

from __future__ import annotations

import helm_python as helm
import pytest

from tests.helm.chart import CONFIGS, EXTERNAL_DB, Obj, chart, lint, render

MEILI = {"backend": "meilisearch", "meiliUrl": "http://meili:7700"}
PG = {"backend": "postgresql", "url": "postgresql://u:p@pg:5432/maka"}

# Each: values, and a fragment the refusal names (a key's path; for a refused key of
# settings.extra the engine names the key, at the path '').
BAD: dict[str, tuple[Obj, str]] = {
    "split on sqlite and embedded search": ({"topology": "split"}, "/database/backend"),
    "split on postgresql, embedded search": (
        {"topology": "split", "database": PG},
        "/search/backend",
    ),
    "split on meilisearch, sqlite": ({"topology": "split", "search": MEILI}, "/database/backend"),
    "two all replicas on sqlite": ({"all": {"replicas": 2}}, "/database/backend"),
    "two all replicas, embedded search": (
        {"all": {"replicas": 2}, "database": PG},
        "/search/backend",
    ),
    "unknown topology": ({"topology": "both"}, "/topology"),
    "negative replicas": ({"all": {"replicas": -1}}, "/all/replicas"),
    "replicas as a string": ({"all": {"replicas": "2"}}, "/all/replicas"),
    "unknown top-level key (a typo)": ({"replica": 2}, "replica"),
    "unknown feishu mode": ({"feishu": {"mode": "poll"}}, "/feishu/mode"),
    "feishu domain without scheme": ({"feishu": {"domain": "open.feishu.cn"}}, "/feishu/domain"),
    "postgresql without a url": ({"database": {"backend": "postgresql"}}, "/database/url"),
    "a database url that is no postgresql": (
        {"database": {"backend": "postgresql", "url": "mysql://u:p@db/maka"}},
        "/database/url",
    ),
    "meilisearch without a url": ({"search": {"backend": "meilisearch"}}, "/search/meiliUrl"),
    "a webhook-mode app without a verification token or encrypt key": (
        {"feishu": {"appId": "cli_a", "appSecret": "s"}},
        "/feishu/verificationToken",
    ),
    "a secret setting in the configmap": (
        {"settings": {"extra": {"MAKA_MODEL_API_KEY": "sk-123"}}},
        "invalid propertyName 'MAKA_MODEL_API_KEY'",
    ),
    "the console token in the configmap": (
        {"settings": {"extra": {"MAKA_CONSOLE_TOKEN": "console-secret"}}},
        "invalid propertyName 'MAKA_CONSOLE_TOKEN'",
    ),
    "the database url in the configmap": (
        {"settings": {"extra": {"MAKA_DATABASE_URL": "postgresql://u:p@pg/maka"}}},
        "invalid propertyName 'MAKA_DATABASE_URL'",
    ),
    "a chart-owned setting in extra": (
        {"settings": {"extra": {"MAKA_HTTP_HOST": "127.0.0.1"}}},
        "invalid propertyName 'MAKA_HTTP_HOST'",
    ),
    "a setting that is no MAKA_ name": (
        {"settings": {"extra": {"PATH": "/tmp"}}},
        "invalid propertyName 'PATH'",
    ),
    "bundled meilisearch without a master key": (
        {"search": {"backend": "meilisearch"}, "meilisearch": {"enabled": True}},
        "/meilisearch/masterKey",
    ),
    "bundled meilisearch with a short master key": (
        {
            "search": {"backend": "meilisearch"},
            "meilisearch": {"enabled": True, "masterKey": "short"},
        },
        "/meilisearch/masterKey",
    ),
    "bundled meilisearch with embedded search": (
        {"meilisearch": {"enabled": True, "masterKey": "0123456789abcdef0123"}},
        "/search/backend",
    ),
    "bundled postgresql without a password": (
        {"database": {"backend": "postgresql"}, "postgresql": {"enabled": True}},
        "/postgresql/auth/password",
    ),
    "bundled postgresql with a password that breaks the url": (
        {
            "database": {"backend": "postgresql"},
            "postgresql": {"enabled": True, "auth": {"password": "p@ss/word:0123"}},
        },
        "/postgresql/auth/password",
    ),
    "bundled postgresql beside an external url": (
        {"database": PG, "postgresql": {"enabled": True, "auth": {"password": "0123456789abc"}}},
        "/database/url",
    ),
    "web autoscaling without the web role": (
        {"web": {"autoscaling": {"enabled": True}}},
        "/topology",
    ),
    "an unknown log level": ({"settings": {"logLevel": "VERBOSE"}}, "/settings/logLevel"),
    "a public URL with a path": (
        {"settings": {"publicUrl": "https://maka.example.com/status"}},
        "/settings/publicUrl",
    ),
    "a resource quantity that is no quantity": (
        {"all": {"resources": {"limits": {"memory": "lots"}}}},
        "/all/resources/limits/memory",
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_schema_refuses(case: str) -> None:
    values, fragment = BAD[case]
    with pytest.raises(helm.HelmValuesError) as refused:
        chart().validate_schema(values)
    assert fragment in str(refused.value)
    # Rendering (helm install / template) refuses the same values.
    with pytest.raises(helm.HelmValuesError):
        render(values)


def test_lint_reports_refused_values_as_errors() -> None:
    report = lint({"topology": "split"})
    assert report["errors"]
    assert any(m["severity"] == 3 for m in report["messages"])


GOOD: dict[str, Obj] = {
    **CONFIGS,
    "split with an existing secret only": {
        "topology": "split",
        "existingSecret": "creds",
        "database": {"backend": "postgresql"},
        "search": {"backend": "meilisearch", "meiliUrl": "http://meili:7700"},
    },
    "one all replica on postgresql, embedded search": {"database": PG},
    "bundled servers with existing secrets": {
        "all": {"replicas": 2},
        "database": {"backend": "postgresql"},
        "search": {"backend": "meilisearch"},
        "postgresql": {"enabled": True, "auth": {"existingSecret": "pg"}},
        "meilisearch": {"enabled": True, "existingSecret": "meili"},
    },
    "zero replicas (paused)": {"all": {"replicas": 0}},
    "extra settings": {"settings": {"extra": {"MAKA_CONTEXT_TOKENS": 12000}}},
    "scaled all": {"all": {"replicas": 4}, **EXTERNAL_DB},
    "pdb as a percentage": {"podDisruptionBudget": {"maxUnavailable": "50%"}},
    "webhook mode with a verification token": {
        "feishu": {"appId": "cli_a", "appSecret": "s", "verificationToken": "t"}
    },
    "webhook mode with an encrypt key": {"feishu": {"appId": "cli_a", "encryptKey": "k"}},
    "webhook mode, the token in an existing secret": {
        "feishu": {"appId": "cli_a"},
        "existingSecret": "creds",
    },
    "long connection without a token": {"feishu": {"appId": "cli_a", "mode": "ws"}},
}


@pytest.mark.parametrize("case", GOOD)
def test_schema_accepts(case: str) -> None:
    chart().validate_schema(GOOD[case])

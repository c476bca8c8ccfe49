"""With Feishu configured, the service loads only the parts of the lark-oapi SDK it uses.

Any import from the SDK normally runs `lark_oapi/__init__.py`, which imports every API service
(about 160 MB resident); `sources/feishu/sdk.py` defers the SDK's package `__init__`s and
imports the modules we use by name. This pins that a running app with a Feishu app (webhook
and long connection, against the fake) and the history source run none of those `__init__`s
and never import `lark_oapi.client` (which imports every service); that the long-connection
client is not imported in webhook mode; that the whole SDK is still there for code that asks
for it; and that no other module imports the SDK itself. (`benchmarks/footprint.py` measures
the RSS.)"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

RUN_APP = """
import asyncio, json, sys
from pathlib import Path

from bot.config import load_settings
from tests.apps import running_app
from tests.echo_responder import EchoComponent
from tests.fakes import FeishuFake
from tests.waiting import wait_until

MODE, DATA = sys.argv[1], Path(sys.argv[2])


def deferred_inits_run():
    # Packages whose __init__ the hook deferred carry its __getattr__ until that __init__ runs.
    return sorted(
        name for name, module in list(sys.modules.items())
        if (name in ("lark_oapi", "lark_oapi.api") or name.startswith("lark_oapi.api."))
        and hasattr(module, "__path__") and "__getattr__" not in vars(module)
    )


async def main():
    async with FeishuFake() as fake:
        app_id, secret = fake.new_app()
        settings = load_settings(
            data_dir=DATA, http_port=0, feishu_app_id=app_id, feishu_app_secret=secret,
            feishu_verification_token="token", feishu_domain=fake.url, feishu_mode=MODE,
        )
        async with running_app(settings, bot=EchoComponent()) as app:
            async def ready():
                async with app.http.get(f"{app.url}/readyz") as resp:
                    return resp.status == 200
            await wait_until(ready, timeout=30)
            import sources.feishu.history  # the history source (a scheduled sync imports it too)
            mods = sorted(m for m in sys.modules if m.startswith("lark_oapi"))
            print("RESULT", json.dumps({
                "lark_modules": len(mods),
                "client": "lark_oapi.client" in mods,
                "ws_client": "lark_oapi.ws.client" in mods,
                "inits_run": deferred_inits_run(),
            }))


asyncio.run(main())
"""

WHOLE_SDK = """
import sources.feishu.sdk
import lark_oapi as lark
from lark_oapi.api.im.v1 import CreateMessageRequest, P2ImMessageReceiveV1
client = lark.Client.builder().app_id("a").app_secret("s").build()
assert client.im.v1.message.acreate and client.contact
assert lark.api.im.v1.CreateMessageRequest is CreateMessageRequest
from lark_oapi.api.im.v1.model.create_message_request import CreateMessageRequest as Same
assert Same is CreateMessageRequest and P2ImMessageReceiveV1.__name__ == "P2ImMessageReceiveV1"
print("RESULT ok")
"""


def _run(script: str, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    # The SDK logs to stdout (at shutdown, say): pick our line out.
    return next(line[7:] for line in out.stdout.splitlines() if line.startswith("RESULT "))


@pytest.mark.parametrize("mode", ["webhook", "ws"])
def test_a_feishu_app_loads_no_other_api_service(mode: str, tmp_path: Path) -> None:
    found = json.loads(_run(RUN_APP, mode, str(tmp_path)))
    assert found["lark_modules"] > 0, "the Feishu channel did not load the SDK at all"
    assert not found["client"], "lark_oapi.client (every API service) was imported"
    assert found["inits_run"] == [], "an SDK package __init__ ran (it imports a whole API)"
    assert found["ws_client"] is (mode == "ws")


def test_the_whole_sdk_is_still_there_for_whoever_asks() -> None:
    assert _run(WHOLE_SDK) == "ok"


def test_only_feishu_sdk_imports_the_sdk() -> None:
    # Anything else importing lark_oapi directly would get pieces the hook has not deferred
    # for (or run a package __init__ by asking a package for a name).
    offenders = []
    for package in ("bot", "sources", "storage"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "sources" / "feishu" / "sdk.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = (
                    [alias.name for alias in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom) and not node.level
                    else []
                )
                if any(name == "lark_oapi" or name.startswith("lark_oapi.") for name in names):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == [], "import the SDK's pieces from sources.feishu.sdk"

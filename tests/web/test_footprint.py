"""The service on the embedded defaults does not load the Feishu SDK: `import lark_oapi` runs
the SDK's package `__init__`, which imports every API (about 160 MB resident). Only a
configured Feishu channel or source loads it. (`benchmarks/footprint.py` measures the RSS.)"""

from __future__ import annotations

import subprocess
import sys

SERVE_IMPORTS = """
import sys
from bot.config import load_settings
from bot.runtime import components_for
from bot.config import Role
settings = load_settings()
assert not settings.feishu_configured
for component in components_for(settings, Role.ALL):
    pass
import bot.cli.serve
print("lark_oapi" in sys.modules)
"""


def test_the_embedded_service_does_not_import_the_feishu_sdk(tmp_path: object) -> None:
    env = {"MAKA_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", SERVE_IMPORTS], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False", "something on the embedded path imports lark_oapi"

"""The one place that imports the lark-oapi SDK: every other module takes its pieces from here.

Why this module exists: any import from the SDK (`import lark_oapi.core.model`, say) first
runs `lark_oapi/__init__.py`, and that imports every API the SDK has, some 60 services and
8,800 modules, about 160 MB resident (upstream larksuite/oapi-sdk-python issues #74, #121).
`lark_oapi/api/__init__.py` does the same; `lark_oapi.client.Client` imports every service;
and `lark_oapi.ws.client` imports the event processors of 20 services, each of which runs
its service's package `__init__`, which imports all of that service's models. We use a
handful of those modules: the core (config, requests, responses, transport, AES), the im/v1
message requests and, in long-connection mode only, the ws client with its event models.

So before anything is imported from the SDK, `_defer_package_inits` installs an import hook
for the package `lark_oapi`, `lark_oapi.api` and every package below `lark_oapi.api`: each is
created the ordinary way (its real `__spec__`, `__path__`, `__file__`), so its submodules
import as usual, but its `__init__.py` runs only when someone asks the package for a name it
does not have yet (a module `__getattr__`; `from package import *` asks for `__all__`). The
modules we use are then imported by their full names and are the SDK's own, unchanged. Code
elsewhere in the process that wants the whole SDK (`import lark_oapi as lark; lark.Client`,
as the Feishu fake's self-tests do) still gets it: the first such attribute access runs the
real `__init__`, at the old price. If the SDK was fully imported before this module, the hook
changes nothing.

`lark.Client` itself cannot be had without importing every service module, and its `a*`
methods open a new HTTP client per call anyway: we send the SDK's typed requests on our own
kept-alive session (`sources/feishu/transport.py`).

tests/channels/feishu/test_sdk_imports.py pins that a configured Feishu channel and the
history source leave the SDK's other services unimported.
"""

from __future__ import annotations

# ruff: noqa: E402  (the SDK is imported below the import hook that must precede it)
import importlib.abc
import importlib.machinery
import sys
import threading
import types
from collections.abc import Sequence
from typing import Any

_ROOT = "lark_oapi"
_API = "lark_oapi.api"


def _deferred(name: str) -> bool:
    return name in (_ROOT, _API) or name.startswith(_API + ".")


class _DeferredInit(importlib.abc.Loader):
    """Wraps a package's own loader: the package module is set up, its `__init__.py` is not
    run until a name it lacks is asked for."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def __getattr__(self, name: str) -> Any:  # get_resource_reader, is_package, get_code ...
        return getattr(self._loader, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        loader = self._loader
        lock = threading.RLock()
        namespace = module.__dict__

        def __getattr__(name: str) -> Any:
            with lock:
                if namespace.get("__getattr__") is __getattr__:
                    del namespace["__getattr__"]
                    loader.exec_module(module)  # the package's real __init__.py
            try:
                return namespace[name]
            except KeyError:
                raise AttributeError(
                    f"module {module.__name__!r} has no attribute {name!r}"
                ) from None

        namespace["__getattr__"] = __getattr__


class _DeferPackageInits(importlib.abc.MetaPathFinder):
    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if not _deferred(fullname):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            return spec  # a plain module (or nothing): imported as usual
        spec.loader = _DeferredInit(spec.loader)
        return spec


def _defer_package_inits() -> None:
    if not any(isinstance(finder, _DeferPackageInits) for finder in sys.meta_path):
        sys.meta_path.insert(0, _DeferPackageInits())


_defer_package_inits()

# The pieces, each from the module that defines it (a package's own names would run its
# __init__). Keep this list to what the code uses.
from lark_oapi.api.cardkit.v1.model.card import Card as CardKitCard
from lark_oapi.api.cardkit.v1.model.content_card_element_request import (
    ContentCardElementRequest,
)
from lark_oapi.api.cardkit.v1.model.content_card_element_request_body import (
    ContentCardElementRequestBody,
)
from lark_oapi.api.cardkit.v1.model.create_card_request import CreateCardRequest
from lark_oapi.api.cardkit.v1.model.create_card_request_body import CreateCardRequestBody
from lark_oapi.api.cardkit.v1.model.settings_card_request import SettingsCardRequest
from lark_oapi.api.cardkit.v1.model.settings_card_request_body import SettingsCardRequestBody
from lark_oapi.api.cardkit.v1.model.update_card_request import UpdateCardRequest
from lark_oapi.api.cardkit.v1.model.update_card_request_body import UpdateCardRequestBody
from lark_oapi.api.im.v1.model.create_message_reaction_request import (
    CreateMessageReactionRequest,
)
from lark_oapi.api.im.v1.model.create_message_reaction_request_body import (
    CreateMessageReactionRequestBody,
)
from lark_oapi.api.im.v1.model.create_message_request import CreateMessageRequest
from lark_oapi.api.im.v1.model.create_message_request_body import (
    CreateMessageRequestBody,
)
from lark_oapi.api.im.v1.model.delete_message_reaction_request import (
    DeleteMessageReactionRequest,
)
from lark_oapi.api.im.v1.model.emoji import Emoji
from lark_oapi.api.im.v1.model.get_message_request import GetMessageRequest
from lark_oapi.api.im.v1.model.get_message_resource_request import GetMessageResourceRequest
from lark_oapi.api.im.v1.model.list_chat_request import ListChatRequest
from lark_oapi.api.im.v1.model.list_message_reaction_request import ListMessageReactionRequest
from lark_oapi.api.im.v1.model.list_message_request import ListMessageRequest
from lark_oapi.api.im.v1.model.patch_message_request import PatchMessageRequest
from lark_oapi.api.im.v1.model.patch_message_request_body import PatchMessageRequestBody
from lark_oapi.api.im.v1.model.reply_message_request import ReplyMessageRequest
from lark_oapi.api.im.v1.model.reply_message_request_body import (
    ReplyMessageRequestBody,
)
from lark_oapi.api.speech_to_text.v1.model.file_config import FileConfig as SpeechFileConfig
from lark_oapi.api.speech_to_text.v1.model.file_recognize_speech_request import (
    FileRecognizeSpeechRequest,
)
from lark_oapi.api.speech_to_text.v1.model.file_recognize_speech_request_body import (
    FileRecognizeSpeechRequestBody,
)
from lark_oapi.api.speech_to_text.v1.model.speech import Speech
from lark_oapi.core.enum import AccessTokenType, HttpMethod, LogLevel
from lark_oapi.core.json import JSON
from lark_oapi.core.model import (
    BaseRequest,
    BaseResponse,
    RawResponse,
    RequestOption,
)
from lark_oapi.core.utils import AESCipher

__all__ = [
    "JSON",
    "AESCipher",
    "AccessTokenType",
    "BaseRequest",
    "BaseResponse",
    "CardKitCard",
    "ContentCardElementRequest",
    "ContentCardElementRequestBody",
    "CreateCardRequest",
    "CreateCardRequestBody",
    "CreateMessageReactionRequest",
    "CreateMessageReactionRequestBody",
    "CreateMessageRequest",
    "CreateMessageRequestBody",
    "DeleteMessageReactionRequest",
    "Emoji",
    "FileRecognizeSpeechRequest",
    "FileRecognizeSpeechRequestBody",
    "GetMessageRequest",
    "GetMessageResourceRequest",
    "HttpMethod",
    "ListChatRequest",
    "ListMessageReactionRequest",
    "ListMessageRequest",
    "LogLevel",
    "PatchMessageRequest",
    "PatchMessageRequestBody",
    "RawResponse",
    "ReplyMessageRequest",
    "ReplyMessageRequestBody",
    "RequestOption",
    "SettingsCardRequest",
    "SettingsCardRequestBody",
    "Speech",
    "SpeechFileConfig",
    "UpdateCardRequest",
    "UpdateCardRequestBody",
    "long_connection",
]


def long_connection() -> Any:  # the module lark_oapi.ws.client
    """`lark_oapi.ws.client`, the long-connection client (`.Client`, and the `loop` global it
    schedules on), imported on first use: only MAKA_FEISHU_MODE=ws needs it, and it costs
    some 15 MB (websockets, protobuf, and the event models of the 20 services whose
    processors `lark_oapi.event.dispatcher_handler` imports)."""
    from lark_oapi.ws import client

    return client

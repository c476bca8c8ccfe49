"""Speech recognition of the Feishu fake: `POST /open-apis/speech_to_text/v1/speech/file_recognize`
as https://open.feishu.cn/document/server-docs/ai/speech_to_text-v1/file_recognize describes it.

Request: `{"speech": {"speech": <base64 PCM>}, "config": {"file_id": <16 letters, digits or
_>, "format": "pcm", "engine_type": "16k_auto"}}`; answer `data.recognition_text`. The doc says
the call suits audio of 60 s or less ("接口适合 60 秒以内音频识别"); its error table names no
code of its own for a longer piece, so the fake refuses one with the generic field-validation
error (99992402, HTTP 400, `api-call-guide/generic-error-code`), as it refuses every other
malformed body. Raw PCM carries no header: the fake can check that it is whole 16-bit samples,
not that it is 16 kHz; the length limit assumes 16 kHz mono (32,000 bytes a second).

The fake cannot hear. A test says what a piece of a given length (in whole seconds) is heard
as (`hear`); a piece no test named is heard as silence (""). `speech_pieces` records the byte
length of every piece recognised, in order. A missing permission is `deny_speech_scope`.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from aiohttp import web

from .feishu_im import _field_error
from .feishu_models import FIELD_VALIDATION, SCOPE_MISSING, FeishuApiError

SPEECH_PATH = "/open-apis/speech_to_text/v1/speech/file_recognize"
PCM_BYTES_PER_SECOND = 16_000 * 2
MAX_PIECE_SECONDS = 60
FILE_ID = re.compile(r"[A-Za-z0-9_]{16}")


class SpeechHandlers:
    """Mixin for FeishuFake: file speech recognition."""

    def __init__(self) -> None:
        self.speech_heard: dict[int, str] = {}  # whole seconds of a piece -> its text
        self.speech_pieces: list[int] = []  # PCM bytes of each piece recognised

    def authenticate(self, request: web.Request) -> str:
        raise NotImplementedError

    def fail_next(  # FeishuFake's own (tests/fakes/feishu.py), with its signature
        self,
        path_prefix: str,
        *,
        times: int = 1,
        http_status: int = 200,
        code: int = 1500,
        msg: str = "internal error",
        headers: dict[str, str] | None = None,
        method: str | None = None,
        raw_body: bytes | str | None = None,
    ) -> None:
        raise NotImplementedError

    def add_speech_routes(self, app: web.Application) -> None:
        app.router.add_post(SPEECH_PATH, self._file_recognize)

    # ---- state for tests -------------------------------------------------------------------

    def hear(self, seconds: int, text: str) -> None:
        """A piece of `seconds` (rounded to whole seconds) is recognised as `text`."""
        self.speech_heard[seconds] = text

    def deny_speech_scope(self, times: int = 1) -> None:
        """The app lacks `speech_to_text:speech`: the generic 99991672 answer."""
        code, msg = SCOPE_MISSING
        self.fail_next(
            SPEECH_PATH,
            times=times,
            http_status=400,
            code=code,
            msg=f"{msg}[speech_to_text:speech]",
        )

    # ---- endpoint --------------------------------------------------------------------------

    async def _file_recognize(self, request: web.Request) -> web.Response:
        self.authenticate(request)
        try:
            body: Any = json.loads(await request.read())
        except ValueError:
            raise _field_error("body", "invalid JSON") from None
        speech = body.get("speech") if isinstance(body, dict) else None
        config = body.get("config") if isinstance(body, dict) else None
        if not isinstance(speech, dict) or not isinstance(speech.get("speech"), str):
            raise _field_error("speech.speech", "is required and must be a string")
        if not isinstance(config, dict):
            raise _field_error("config", "is required")
        if not isinstance(config.get("file_id"), str) or not FILE_ID.fullmatch(config["file_id"]):
            raise _field_error("config.file_id", "must be 16 letters, digits or underscores")
        if config.get("format") != "pcm":
            raise _field_error("config.format", "only pcm is supported")
        if config.get("engine_type") != "16k_auto":
            raise _field_error("config.engine_type", "only 16k_auto is supported")
        try:
            pcm = base64.b64decode(speech["speech"], validate=True)
        except (binascii.Error, ValueError):
            raise _field_error("speech.speech", "is not base64") from None
        if not pcm or len(pcm) % 2:
            raise _field_error("speech.speech", "is not 16-bit PCM")
        if len(pcm) > MAX_PIECE_SECONDS * PCM_BYTES_PER_SECOND:
            raise FeishuApiError(
                FIELD_VALIDATION,
                detail=f"speech.speech: longer than {MAX_PIECE_SECONDS} s",
            )
        self.speech_pieces.append(len(pcm))
        text = self.speech_heard.get(round(len(pcm) / PCM_BYTES_PER_SECOND), "")
        return web.json_response({"code": 0, "msg": "success", "data": {"recognition_text": text}})

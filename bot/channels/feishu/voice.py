"""Voice messages to text: Feishu's speech recognition of the audio a person sent.

A Feishu voice message is Opus in Ogg. Feishu's `speech_to_text/v1/speech/file_recognize`
(https://open.feishu.cn/document/server-docs/ai/speech_to_text-v1/file_recognize) takes only
raw PCM ("format": "pcm", engine "16k_auto": 16 kHz, mono, 16-bit) and is meant for audio of
60 s or less, so the audio is converted with ffmpeg (a subprocess with a deadline and a bound
on what it may write) and sent in pieces of at most 60 s, one call each, through `FeishuApi`
(counted per API, retried by the one policy); the texts are joined in order.

Every failure is a `VoiceError` with one line a person can read (ffmpeg missing, audio that
cannot be read, audio over the length limit, Feishu refusing): the caller stores that line in
place of a transcript and goes on.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import secrets
import shutil

from bot.channels.feishu.api import FeishuApi, FeishuApiError, FeishuUnreachable
from bot.host.children import end_child
from sources.feishu.sdk import (
    FileRecognizeSpeechRequest,
    FileRecognizeSpeechRequestBody,
    Speech,
    SpeechFileConfig,
)

log = logging.getLogger(__name__)

API = "speech_to_text.file_recognize"
SAMPLE_RATE = 16_000
BYTES_PER_SECOND = SAMPLE_RATE * 2  # mono, 16-bit
CHUNK_SECONDS = 60  # the doc: "接口适合 60 秒以内音频识别"
CHUNK_BYTES = CHUNK_SECONDS * BYTES_PER_SECOND
DEFAULT_MAX_SECONDS = 600.0  # MAKA_FEISHU_SPEECH_MAX_SECONDS
CONVERT_TIMEOUT = 60.0  # seconds ffmpeg may take for one message
# Seconds Feishu may take to recognise one piece: a minute of speech can take longer than
# the 15 s every other call is given (the doc names no figure; this is our margin).
RECOGNIZE_TIMEOUT = 60.0
READ_SIZE = 64 * 1024
STDERR_KEPT = 4096  # the tail of ffmpeg's complaints, for the one line
MAX_LINE = 200


class VoiceError(Exception):
    """Why a voice message was not transcribed, in one line for the user."""

    def __init__(self, reason: str) -> None:
        line = " ".join(reason.split())
        super().__init__(line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + "…")
        self.reason = str(self)


async def transcribe(
    api: FeishuApi,
    audio: bytes,
    *,
    duration_ms: int | None,
    max_seconds: float = DEFAULT_MAX_SECONDS,
) -> str:
    """The text said in `audio` (an Ogg/Opus voice message, or anything ffmpeg reads).

    `duration_ms`, the message's own length when Feishu gave one, lets audio over
    `max_seconds` be refused before it is converted; the converted length is checked too."""
    limit = _seconds(max_seconds)
    if duration_ms is not None and duration_ms > max_seconds * 1000:
        raise VoiceError(f"too long to transcribe: {_seconds(duration_ms / 1000)}, over {limit}")
    pcm = await to_pcm(audio, max_seconds=max_seconds)
    texts = [await _recognize(api, chunk) for chunk in chunks(pcm)]
    return " ".join(text for text in (t.strip() for t in texts) if text)


def chunks(pcm: bytes) -> list[bytes]:
    """The PCM in pieces of at most CHUNK_SECONDS, cut on whole samples."""
    return [pcm[start : start + CHUNK_BYTES] for start in range(0, len(pcm), CHUNK_BYTES)]


async def to_pcm(audio: bytes, *, max_seconds: float, timeout: float = CONVERT_TIMEOUT) -> bytes:
    """`audio` as 16 kHz mono 16-bit little-endian PCM, by ffmpeg reading it from stdin."""
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        raise VoiceError("ffmpeg is not installed")
    if not audio:
        raise VoiceError("could not read the audio: the file is empty")
    most = int(max_seconds * BYTES_PER_SECOND)
    # `-t` stops ffmpeg a second past the limit, so a long file costs no more than that; one
    # byte over the limit is enough to say it is too long.
    args = [
        *("-nostdin", "-hide_banner", "-loglevel", "error", "-i", "pipe:0"),
        *("-t", f"{max_seconds + 1:g}", "-vn", "-ac", "1", "-ar", str(SAMPLE_RATE)),
        *("-f", "s16le", "-acodec", "pcm_s16le", "pipe:1"),
    ]
    proc = await asyncio.create_subprocess_exec(
        ffmpeg,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        pcm, complaint, code = await asyncio.wait_for(_run(proc, audio, most), timeout)
    except TimeoutError:
        raise VoiceError(f"could not convert the audio within {timeout:g} s") from None
    finally:
        await end_child(proc)  # killed if still running; its pipes drained so it is reaped
    if len(pcm) > most:
        raise VoiceError(f"too long to transcribe: over {_seconds(max_seconds)}")
    if code != 0:
        raise VoiceError(f"could not read the audio: {complaint or f'ffmpeg exit {code}'}")
    if len(pcm) < BYTES_PER_SECOND // 10:  # under 0.1 s: nothing a person said
        raise VoiceError("could not read the audio: no sound in it")
    return pcm[: len(pcm) - len(pcm) % 2]


async def _run(proc: asyncio.subprocess.Process, audio: bytes, most: int) -> tuple[bytes, str, int]:
    """Feed ffmpeg, read at most `most` + 1 bytes of its output and the tail of its errors."""
    assert proc.stdin and proc.stdout and proc.stderr

    async def feed() -> None:
        assert proc.stdin
        try:  # ffmpeg may stop reading early (a broken file, or -t reached): not our error
            proc.stdin.write(audio)
            await proc.stdin.drain()
            proc.stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            pass

    async def errors() -> bytes:
        assert proc.stderr
        tail = b""
        while piece := await proc.stderr.read(READ_SIZE):
            tail = (tail + piece)[-STDERR_KEPT:]
        return tail

    feeding, complaining = asyncio.create_task(feed()), asyncio.create_task(errors())
    try:
        out = bytearray()
        while len(out) <= most and (piece := await proc.stdout.read(READ_SIZE)):
            out += piece
        if len(out) > most:
            proc.kill()  # over the limit: the rest is not wanted
        await feeding
        tail = await complaining
        code = await proc.wait()
    finally:  # on the deadline too: nothing left running
        feeding.cancel()
        complaining.cancel()
    lines = [line.strip() for line in tail.decode("utf-8", "replace").splitlines()]
    last = next((line for line in reversed(lines) if line), "")
    return bytes(out), last.removeprefix("pipe:0: "), code  # our stdin is no name to show


async def _recognize(api: FeishuApi, pcm: bytes) -> str:
    request = (
        FileRecognizeSpeechRequest.builder()
        .request_body(
            FileRecognizeSpeechRequestBody.builder()
            .speech(Speech.builder().speech(base64.b64encode(pcm).decode("ascii")).build())
            .config(
                SpeechFileConfig.builder()
                .file_id(secrets.token_hex(8))  # "16 位字符串", letters, digits and _
                .format("pcm")
                .engine_type("16k_auto")
                .build()
            )
            .build()
        )
        .build()
    )
    try:
        resp = await api.call(API, lambda opt: api.send(request, opt, timeout=RECOGNIZE_TIMEOUT))
    except FeishuApiError as exc:
        log.warning("speech recognition failed: %s", exc)
        raise VoiceError(f"Feishu speech recognition refused (code {exc.code}): {exc.msg}") from exc
    except FeishuUnreachable as exc:
        raise VoiceError(f"Feishu speech recognition did not answer: {exc}") from exc
    return str(resp.data.get("recognition_text") or "")


def _seconds(seconds: float) -> str:
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    return f"{whole // 60} min" + (f" {whole % 60} s" if whole % 60 else "")

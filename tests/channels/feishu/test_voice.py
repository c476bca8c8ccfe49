"""Voice messages to text (bot/channels/feishu/voice.py): ffmpeg's PCM, in pieces of at most
60 s, through Feishu's file speech recognition (the fake's, which checks the documented request
and says what a test told it a piece of a given length is heard as). The audio is made by
ffmpeg itself, as Feishu voice messages are: Ogg/Opus."""

from __future__ import annotations

import asyncio
import base64
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bot.channels.feishu.api import FeishuApi
from bot.channels.feishu.voice import VoiceError, transcribe
from tests.fakes import FeishuFake
from tests.fakes.feishu_speech import SPEECH_PATH

pytestmark = pytest.mark.skipif(
    shutil.which("ffmpeg") is None,
    reason="ffmpeg is not installed (scripts/ensure-ffmpeg installs it on Debian)",
)

PCM_PER_SECOND = 32_000


class Counted:
    """The API use FeishuApi reports (the status page's counter stands here)."""

    def __init__(self) -> None:
        self.apis: list[str] = []

    async def count(self, api: str) -> None:
        self.apis.append(api)


async def voice(seconds: float, tmp_path: Path) -> bytes:
    """A voice message as Feishu has one: Opus in Ogg, mono, made by ffmpeg."""
    out = tmp_path / f"voice-{seconds}.ogg"
    proc = await asyncio.create_subprocess_exec(
        *("ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error"),
        *("-f", "lavfi", "-i", f"sine=frequency=440:duration={seconds}"),
        *("-ac", "1", "-c:a", "libopus", "-b:a", "16k", "-f", "ogg", "-y", str(out)),
    )
    assert await asyncio.wait_for(proc.wait(), 30) == 0, "ffmpeg could not make the test audio"
    return out.read_bytes()


@pytest.fixture
async def speech() -> AsyncIterator[tuple[FeishuFake, FeishuApi, Counted]]:
    async with FeishuFake() as fake:
        app_id, secret = fake.new_app()
        usage = Counted()
        api = FeishuApi(app_id=app_id, app_secret=secret, domain=fake.url, usage=usage)
        try:
            yield fake, api, usage
        finally:
            await api.aclose()


async def test_voice_message_becomes_the_text_feishu_heard(
    speech: tuple[FeishuFake, FeishuApi, Counted], tmp_path: Path
) -> None:
    fake, api, usage = speech
    fake.hear(5, "明天下午三点开会")

    text = await transcribe(api, await voice(5, tmp_path), duration_ms=5000)

    assert text == "明天下午三点开会"
    [request] = [r for r in fake.requests if r.path == SPEECH_PATH]
    assert request.json["config"]["format"] == "pcm"
    assert request.json["config"]["engine_type"] == "16k_auto"
    assert len(request.json["config"]["file_id"]) == 16
    assert usage.apis.count("speech_to_text.file_recognize") == 1


async def test_long_voice_message_is_sent_in_pieces_of_at_most_60_seconds(
    speech: tuple[FeishuFake, FeishuApi, Counted], tmp_path: Path
) -> None:
    fake, api, _ = speech
    fake.hear(60, "a full minute")
    fake.hear(10, "and the rest")

    text = await transcribe(api, await voice(130, tmp_path), duration_ms=130_000)

    assert [round(n / PCM_PER_SECOND) for n in fake.speech_pieces] == [60, 60, 10]
    assert max(fake.speech_pieces) <= 60 * PCM_PER_SECOND
    assert text == "a full minute a full minute and the rest"


async def test_fake_refuses_a_piece_over_60_seconds(
    speech: tuple[FeishuFake, FeishuApi, Counted],
) -> None:
    """The fake holds the client to the documented limit (the test above relies on it)."""
    fake, api, _ = speech
    token = await api.tenant_token()
    body = {
        "speech": {"speech": base64.b64encode(b"\0" * 61 * PCM_PER_SECOND).decode()},
        "config": {"file_id": "abcdef0123456789", "format": "pcm", "engine_type": "16k_auto"},
    }
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            fake.url + SPEECH_PATH, json=body, headers={"Authorization": f"Bearer {token}"}
        ) as resp,
    ):
        answer = await resp.json()
    assert resp.status == 400
    assert answer["code"] == 99992402
    assert "60 s" in answer["msg"]
    assert fake.speech_pieces == []


async def test_corrupt_audio_is_one_line_and_never_reaches_feishu(
    speech: tuple[FeishuFake, FeishuApi, Counted],
) -> None:
    fake, api, _ = speech

    with pytest.raises(VoiceError) as caught:
        await transcribe(api, b"OggS this is not really audio" * 50, duration_ms=3000)

    assert str(caught.value).startswith("could not read the audio")
    assert "\n" not in str(caught.value)
    assert fake.calls(SPEECH_PATH) == 0


async def test_missing_speech_permission_is_one_line(
    speech: tuple[FeishuFake, FeishuApi, Counted], tmp_path: Path
) -> None:
    fake, api, _ = speech
    fake.deny_speech_scope()

    with pytest.raises(VoiceError) as caught:
        await transcribe(api, await voice(3, tmp_path), duration_ms=3000)

    line = str(caught.value)
    assert "99991672" in line and "speech_to_text:speech" in line
    assert "\n" not in line
    assert fake.calls(SPEECH_PATH) == 1  # a refusal is not retried


async def test_voice_over_the_length_limit_is_refused_before_converting(
    speech: tuple[FeishuFake, FeishuApi, Counted], tmp_path: Path
) -> None:
    fake, api, _ = speech

    with pytest.raises(VoiceError, match="too long to transcribe"):
        await transcribe(api, b"never read", duration_ms=601_000)
    # Feishu gave no length: the converted audio is measured instead.
    with pytest.raises(VoiceError, match="too long to transcribe: over 5 s"):
        await transcribe(api, await voice(8, tmp_path), duration_ms=None, max_seconds=5)
    assert fake.calls(SPEECH_PATH) == 0


async def test_without_ffmpeg_the_reason_says_so(
    speech: tuple[FeishuFake, FeishuApi, Counted], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, api, _ = speech
    audio = await voice(2, tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing called ffmpeg there

    with pytest.raises(VoiceError, match=r"^ffmpeg is not installed$"):
        await transcribe(api, audio, duration_ms=2000)

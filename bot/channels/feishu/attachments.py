"""The Feishu side of attachments: download each message's resources (storage/repos/
attachments.py, state `fetch`) and hand the bytes on to extraction (state `extract`).

A documented refusal (the resource is not of this message, the bot cannot download it,
Feishu will not serve it, it is larger than MAKA_ATTACHMENT_MAX_BYTES) fails the attachment
with one line for the user; an outage, a 5xx or a rate limit is backed off and, after
PARK_AFTER tries, parked visibly. Voice is transcribed when speech-to-text is on (part of
bot.channels.feishu.voice), else it is said to be a voice message of so many seconds, with
nothing downloaded; a video is not downloaded at all.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from bot.attachments import records
from bot.attachments.records import Attached, size_text
from bot.attachments.work import AttachmentWorker
from bot.channels.feishu.api import FeishuApi, FeishuApiError, FeishuUnreachable, message_resource
from bot.channels.feishu.voice import VoiceError, transcribe
from bot.config import Settings
from bot.host.notify import Notifier
from sources.feishu.transport import ResourceTooLarge
from storage.db import Database
from storage.repos import attachments

log = logging.getLogger(__name__)

PLATFORM = "feishu"
# The download's documented refusals (im-v1/message/get-2, error table), as the user reads
# them. Any other business error that is not retryable fails the attachment with Feishu's
# own message: retrying a refusal only spends the monthly quota.
REFUSALS = {
    234003: "Feishu says the file is not part of this message",
    234004: "the bot is not in this chat any more",
    234008: "Feishu does not let the bot download this file",
    234037: "Feishu does not serve files this large",
    234043: "Feishu does not let bots download this kind of message's files",
}


def seconds_text(duration_ms: int | None) -> str:
    return f" ({round(duration_ms / 1000)} s)" if duration_ms is not None else ""


class FeishuAttachmentFetcher(AttachmentWorker):
    name = "feishu-attachments"
    state = attachments.FETCH
    platform = PLATFORM

    def __init__(
        self,
        db: Database,
        notifier: Notifier,
        api: FeishuApi,
        settings: Settings,
        instance_id: str,
    ) -> None:
        super().__init__(db, notifier, instance_id)
        self.api = api
        self.settings = settings

    async def handle(self, unit: Attached) -> None:
        if unit.kind == "media":
            await self._done_as_text(unit, f"a video{seconds_text(unit.duration_ms)}, not read")
        elif unit.kind == "audio":
            await self._voice(unit)
        else:
            data = await self._download(unit)
            if data is not None:
                await self._stored(unit, data)

    async def _download(self, unit: Attached) -> bytes | None:
        """The bytes, or None once the row is settled as failed or backed off."""
        limit = self.settings.attachment_max_bytes
        try:
            return await message_resource(
                self.api,
                unit.message_id,
                unit.resource_key,
                image=unit.kind == "image",
                max_bytes=limit,
            )
        except ResourceTooLarge:
            await self.fail(unit, f"could not read: larger than {size_text(limit)}")
        except FeishuApiError as exc:
            if exc.retryable:
                await self.retry_later(unit, f"Feishu answered {exc}")
            else:
                reason = REFUSALS.get(exc.code or 0) or f"Feishu refused it ({exc.code}: {exc.msg})"
                await self.fail(unit, f"could not read: {reason}")
        except FeishuUnreachable as exc:
            await self.retry_later(unit, f"Feishu unreachable: {exc}")
        return None

    async def _stored(self, unit: Attached, data: bytes) -> None:
        sha256 = hashlib.sha256(data).hexdigest()

        async def write(tx: AsyncSession, now: datetime) -> bool:
            await attachments.store_blob(tx, sha256, data, now)
            return await attachments.move(
                tx, unit.id, self.owner, state=attachments.EXTRACT, now=now, sha256=sha256
            )

        await self.settle("fetched", write)

    async def _voice(self, unit: Attached) -> None:
        said = f"a voice message{seconds_text(unit.duration_ms)}"
        if not self.settings.feishu_speech_to_text:
            await self._done_as_text(unit, f"{said}, not transcribed")
            return
        data = await self._download(unit)
        if data is None:
            return
        try:
            text = await transcribe(
                self.api,
                data,
                duration_ms=unit.duration_ms,
                max_seconds=self.settings.feishu_speech_max_seconds,
            )
        except VoiceError as exc:
            text = f"{said}, not transcribed: {exc}"
        await self._done_as_text(unit, text, size=len(data))

    async def _done_as_text(self, unit: Attached, text: str, *, size: int | None = None) -> None:
        kind = "audio" if unit.kind == "audio" else "media"

        async def write(tx: AsyncSession, now: datetime) -> bool:
            return await records.finish(
                tx, unit, self.owner, text=text, kind=kind, size=size, now=now
            )

        await self.settle("done", write)

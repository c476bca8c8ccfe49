"""The Feishu fake's message resources answer as `im-v1/message/get-2` says: the bytes of a
message's image or file, or the documented error; read through our FeishuApi."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from bot.channels.feishu.api import FeishuApi, FeishuApiError, message_resource
from sources.feishu.transport import ResourceTooLarge
from tests.fakes import FeishuFake
from tests.fakes.feishu_models import RESOURCE_NOT_THE_SENDER, RESOURCE_UNSUPPORTED


class _Uncounted:
    async def count(self, api: str) -> None:
        return None


@pytest.fixture
async def fake_and_api() -> AsyncIterator[tuple[FeishuFake, FeishuApi]]:
    async with FeishuFake() as fake:
        app_id, secret = fake.new_app()
        api = FeishuApi(
            app_id=app_id, app_secret=secret, domain=fake.url, usage=_Uncounted(), max_wait=0.1
        )
        try:
            yield fake, api
        finally:
            await api.aclose()


async def test_a_messages_file_is_downloaded_as_its_bytes(
    fake_and_api: tuple[FeishuFake, FeishuApi],
) -> None:
    fake, api = fake_and_api
    fake.attach_resource("om_1", "file_v3_a", b"%PDF-1.4 hello", content_type="application/pdf")
    fake.attach_resource("om_1", "img_v3_b", b"\x89PNG...", kind="image", content_type="image/png")
    pdf = await message_resource(api, "om_1", "file_v3_a", image=False, max_bytes=1000)
    png = await message_resource(api, "om_1", "img_v3_b", image=True, max_bytes=1000)
    assert (pdf, png) == (b"%PDF-1.4 hello", b"\x89PNG...")


async def test_a_key_not_of_the_message_or_the_wrong_type_is_234003(
    fake_and_api: tuple[FeishuFake, FeishuApi],
) -> None:
    fake, api = fake_and_api
    fake.attach_resource("om_1", "img_v3_b", b"png", kind="image")
    for message_id, image in (("om_other", True), ("om_1", False)):
        with pytest.raises(FeishuApiError) as caught:
            await message_resource(api, message_id, "img_v3_b", image=image, max_bytes=1000)
        assert (caught.value.code, caught.value.http_status) == (234003, 400)
        assert not caught.value.retryable


async def test_documented_errors_234008_and_234043_are_not_retried(
    fake_and_api: tuple[FeishuFake, FeishuApi],
) -> None:
    fake, api = fake_and_api
    fake.attach_resource("om_1", "k8", b"x", error=RESOURCE_NOT_THE_SENDER)
    fake.attach_resource("om_1", "k43", b"x", error=RESOURCE_UNSUPPORTED)
    for key, code in (("k8", 234008), ("k43", 234043)):
        with pytest.raises(FeishuApiError) as caught:
            await message_resource(api, "om_1", key, image=False, max_bytes=1000)
        assert caught.value.code == code
        assert fake.resource_downloads(key) == 1


async def test_a_file_over_the_callers_limit_is_abandoned(
    fake_and_api: tuple[FeishuFake, FeishuApi],
) -> None:
    fake, api = fake_and_api
    fake.attach_resource("om_1", "big", b"x" * 200_000)
    with pytest.raises(ResourceTooLarge):
        await message_resource(api, "om_1", "big", image=False, max_bytes=100_000)


async def test_a_type_other_than_image_or_file_is_234001() -> None:
    async with FeishuFake() as fake, aiohttp.ClientSession() as http:
        app_id, _ = fake.new_app()
        token, _ = fake.issue_token(app_id)
        fake.attach_resource("om_1", "k", b"x")
        async with http.get(
            f"{fake.url}/open-apis/im/v1/messages/om_1/resources/k",
            params={"type": "audio"},
            headers={"Authorization": f"Bearer {token}"},
        ) as resp:
            body = await resp.json()
        assert (resp.status, body["code"]) == (400, 234001)

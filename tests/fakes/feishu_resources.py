"""Message resources of the Feishu fake: the images and files messages carry, downloaded as
`server-docs/im-v1/message/get-2` ("获取消息中的资源文件",
https://open.feishu.cn/document/server-docs/im-v1/message/get-2) describes:

- GET /open-apis/im/v1/messages/:message_id/resources/:file_key?type=image|file
  answers the bytes (HTTP 200, the file's Content-Type); voice and video are `type=file`.
  The doc: resources up to 100 MB can be downloaded; stickers and the messages inside a
  merged forward cannot; the bot must be in the message's chat.
Errors are the JSON envelope with HTTP 400, codes from the doc's error table (see
feishu_models.py). A test attaches bytes to a message id with `attach_resource`, or makes
one resource answer a given error (`error=`).
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from .feishu_models import (
    RESOURCE_INVALID_PARAM,
    RESOURCE_NOT_IN_MESSAGE,
    RESOURCE_TOO_LARGE,
    FeishuApiError,
)

DOWNLOAD_LIMIT_BYTES = 100 * 1024 * 1024  # "当前仅支持 100M 以内的资源文件的下载"


@dataclass
class FakeResource:
    message_id: str
    key: str
    data: bytes
    kind: str  # "image" | "file" (what `type=` must say)
    content_type: str
    error: tuple[int, str] | None = None


class ResourceHandlers:
    """Mixin for FeishuFake: the resources attached to message ids."""

    def __init__(self) -> None:
        self.resources: dict[tuple[str, str], FakeResource] = {}

    def authenticate(self, request: web.Request) -> str:
        raise NotImplementedError

    def add_resource_routes(self, app: web.Application) -> None:
        app.router.add_get(
            "/open-apis/im/v1/messages/{message_id}/resources/{file_key}", self._get_resource
        )

    def attach_resource(
        self,
        message_id: str,
        key: str,
        data: bytes,
        *,
        kind: str = "file",
        content_type: str = "application/octet-stream",
        error: tuple[int, str] | None = None,
    ) -> FakeResource:
        """Make `key` a resource of `message_id` (the event the test sends names it)."""
        resource = FakeResource(message_id, key, data, kind, content_type, error)
        self.resources[(message_id, key)] = resource
        return resource

    def resource_downloads(self, key: str) -> int:
        """How many times `key` was asked for (answered or not)."""
        return sum(
            1
            for r in getattr(self, "requests", [])
            if r.method == "GET" and r.path.endswith(f"/resources/{key}")
        )

    async def _get_resource(self, request: web.Request) -> web.StreamResponse:
        self.authenticate(request)
        kind = request.query.get("type")
        if kind not in ("image", "file"):
            raise FeishuApiError(RESOURCE_INVALID_PARAM, detail="type must be image or file")
        key = (request.match_info["message_id"], request.match_info["file_key"])
        resource = self.resources.get(key)
        if resource is None or resource.kind != kind:
            raise FeishuApiError(RESOURCE_NOT_IN_MESSAGE, detail=key[1])
        if resource.error is not None:
            raise FeishuApiError(resource.error)
        if len(resource.data) > DOWNLOAD_LIMIT_BYTES:
            raise FeishuApiError(RESOURCE_TOO_LARGE)
        return web.Response(body=resource.data, content_type=resource.content_type)

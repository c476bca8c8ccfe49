"""The owner's documents, read as the owner: one unit `docs:owner`, scope `owner:docs`.

What is listed: the docx documents of the owner's root folder in Drive
(`GET drive/v1/files`, no folder_token = the root folder; `page_token`/`has_more`;
each file's `token`, `name`, `type`, `modified_time` in epoch seconds:
https://open.feishu.cn/document/server-docs/docs/drive-v1/folder/list), and the docx nodes of
the wiki spaces the owner can see (`GET wiki/v2/spaces`, then `GET wiki/v2/spaces/:space_id/
nodes` from the top, `parent_node_token` for a node that `has_child`; a node's document is its
`obj_token`, edited at `obj_edit_time`:
https://open.feishu.cn/document/server-docs/docs/wiki-v2/space/list,
https://open.feishu.cn/document/server-docs/docs/wiki-v2/space-node/list). Each document's
text is `GET docx/v1/documents/:document_id/raw_content` (`data.content`:
https://open.feishu.cn/document/server-docs/docs/docs/docx-v1/document/raw_content).

Incremental by edit time: the synced cursor keeps each document's `modified_time`, and only a
document whose time changed is fetched again. A document is one record, its whole text
(memory_original reads a long one in parts); its external id is `<token>#v<modified_time>`,
so an edit is a new record and the previous version leaves search (Page.removed, the
tombstones a recall uses), and so does a document gone from the list or that Feishu says was
deleted (docx codes 1770002 not found, 1770003 deleted). A document that cannot be read (no
permission) does not stop the others: it is tried again on the next sync, and the source shows
the error once the rest is stored.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import UTC, datetime
from typing import Any

from sources.base import Observation, Page, Removal, SourceError, SyncRequest, Unit, UnitState
from sources.feishu.owner_api import FeishuError, OwnerApi
from storage.repos.source_records import NewRecord

KIND = "docs"
UNIT = "docs:owner"
SCOPE = "owner:docs"
PAGE_SIZE = 50  # within every list's maximum (drive 200, wiki 50)
MAX_WIKI_DEPTH = 20  # a wiki tree deeper than this is not followed further
BATCH = 10  # documents fetched per committed page
GONE_CODES = (1770002, 1770003)  # not found, deleted


def version_id(token: str, modified: str) -> str:
    return f"{token}#v{modified}"


class OwnerDocs:
    kind = KIND

    def __init__(self, api: OwnerApi) -> None:
        self.api = api

    async def observe(self) -> Observation:
        return Observation([Unit(UNIT, SCOPE, "the owner's documents")], {})

    async def listed(self) -> dict[str, dict[str, Any]]:
        """token -> file, of the docx documents in the owner's root folder and wiki spaces
        (a wiki node as a file: its document's token, title and edit time)."""
        found: dict[str, dict[str, Any]] = {}
        async for file in self._pages("drive/v1/files", "files", "next_page_token", {}):
            if file.get("type") == "docx" and file.get("token"):
                found[str(file["token"])] = file
        async for space in self._pages("wiki/v2/spaces", "items", "page_token", {}):
            if space.get("space_id"):
                await self._wiki_nodes(str(space["space_id"]), None, found)
        return found

    async def _wiki_nodes(
        self, space_id: str, parent: str | None, found: dict[str, dict[str, Any]], depth: int = 0
    ) -> None:
        params = {"parent_node_token": parent} if parent else {}
        path = f"wiki/v2/spaces/{space_id}/nodes"
        async for node in self._pages(path, "items", "page_token", params):
            if node.get("obj_type") == "docx" and node.get("obj_token"):
                found[str(node["obj_token"])] = {
                    "token": node["obj_token"],
                    "name": node.get("title"),
                    "modified_time": node.get("obj_edit_time"),
                    "owner_id": node.get("owner"),
                    "url": node.get("url"),
                }
            if node.get("has_child") and node.get("node_token") and depth < MAX_WIKI_DEPTH:
                await self._wiki_nodes(space_id, str(node["node_token"]), found, depth + 1)

    async def _pages(
        self, path: str, items: str, next_key: str, params: dict[str, Any]
    ) -> AsyncGenerator[dict[str, Any], None]:
        page_token = ""
        while True:
            query: dict[str, Any] = {**params, "page_size": PAGE_SIZE}
            if page_token:
                query["page_token"] = page_token
            data = await self.api.call("GET", path, params=query)
            for item in data.get(items) or []:
                yield item
            page_token = str(data.get(next_key) or "")
            if not data.get("has_more") or not page_token:
                return

    async def sync(self, unit: UnitState, request: SyncRequest) -> AsyncGenerator[Page, None]:
        seen: dict[str, str] = dict((unit.synced_cursor or {}).get("modified") or {})
        files = await self.listed()
        gone = [t for t in seen if t not in files]
        for token in gone:
            del seen[token]
        if gone:
            removals = [Removal(UNIT, t, SCOPE) for t in gone]
            yield Page(cursor={"modified": dict(seen)}, removed=removals, total=len(files))
        changed = [f for t, f in files.items() if seen.get(t) != str(f.get("modified_time"))]
        unreadable: dict[str, str] = {}
        for start in range(0, len(changed), BATCH):
            records: list[NewRecord] = []
            removed: list[Removal] = []
            for file in changed[start : start + BATCH]:
                token, modified = str(file["token"]), str(file.get("modified_time") or "0")
                try:
                    text = await self._text(token)
                except FeishuError as exc:
                    if exc.code in GONE_CODES:
                        seen.pop(token, None)
                        removed.append(Removal(UNIT, token, SCOPE))
                    else:  # e.g. no permission: the others go on; tried again next sync
                        unreadable[token] = str(exc)
                    continue
                if token in seen:  # the previous version leaves search
                    removed.append(Removal(UNIT, token, SCOPE, keep=version_id(token, modified)))
                seen[token] = modified
                records.append(self._record(file, modified, text))
            yield Page(records, {"modified": dict(seen)}, len(files), removed=removed)
        if not gone and not changed:
            yield Page(cursor={"modified": dict(seen)}, total=len(files))
        if unreadable:  # shown as the source's error, once everything else is stored
            token, line = next(iter(unreadable.items()))
            raise SourceError(f"{len(unreadable)} document(s) could not be read, {token}: {line}")

    async def _text(self, token: str) -> str:
        data = await self.api.call("GET", f"docx/v1/documents/{token}/raw_content")
        return str(data.get("content") or "")

    @staticmethod
    def _record(file: dict[str, Any], modified: str, text: str) -> NewRecord:
        title = str(file.get("name") or "")
        edited = datetime.fromtimestamp(int(modified), UTC) if modified.isdigit() else None
        return NewRecord(
            source=UNIT,
            external_id=version_id(str(file["token"]), modified),
            scope=SCOPE,
            text=f"{title}\n\n{text}" if title else text,
            sent_at=edited,
            author=str(file.get("owner_id") or "") or None,
            title=title or None,
            payload={"kind": "document", "token": file["token"], "url": file.get("url")},
        )

    async def aclose(self) -> None:
        await self.api.aclose()

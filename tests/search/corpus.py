"""Deterministic look-alike messages spread over many sessions: every session talks about the
same things, so a filter bug shows up as hits from the wrong session, not as no hits."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from storage.search.base import SearchDocument

TOPICS = ["部署", "重连", "数据库", "超时", "飞书", "日志", "缓存", "权限"]
IDENTIFIERS = ["ERR_CONN_RESET", "getUserName", "src/server/ws.ts", "retryPolicy", "HTTP_502"]
ENGLISH = ["deploy failed", "cache miss", "token expired", "retry later", "disk full"]
QUERIES = [*TOPICS, *IDENTIFIERS, "deploy", "cache", "token", "用户", "ws.ts", "user"]
KINDS = ["message", "note", "log"]
SCOPES = ["private", "group", "shared"]


def session_ids(count: int) -> list[str]:
    return [f"oc_session_{n:03d}" for n in range(count)]


def corpus(sessions: list[str], per_session: int, seed: int = 7) -> list[SearchDocument]:
    rnd = random.Random(seed)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    docs = []
    for s, session in enumerate(sessions):
        for m in range(per_session):
            topic, ident, english = rnd.choice(TOPICS), rnd.choice(IDENTIFIERS), rnd.choice(ENGLISH)
            text = f"用户反馈{topic}问题：{english}，日志里有 {ident}，第{m}次出现"
            docs.append(
                SearchDocument(
                    id=f"{session}/msg-{m}",
                    kind=KINDS[(s + m) % len(KINDS)],
                    text=text,
                    title=f"{topic} 讨论",
                    session_id=session,
                    source_id=f"src-{m % 4}",
                    scope=SCOPES[(s * 7 + m) % len(SCOPES)],
                    time=start + timedelta(minutes=s * per_session + m),
                )
            )
    return docs

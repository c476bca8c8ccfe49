"""Seeded synthetic chat text shared by the search benchmarks (`search.py`, `memory.py`): short
mixed Chinese/English messages with names, error codes, paths and identifiers, and a pool of
queries over them. Not a benchmark (the runner skips files whose name starts with `_`).

The same seed gives the same text in every run, so runs can be compared.
"""

from __future__ import annotations

import random

PEOPLE = ["张伟", "王芳", "李娜", "刘洋", "陈静", "杨帆", "小马", "Alice", "Bob", "Carol"]
TOPICS = ["部署", "重连", "数据库迁移", "权限申请", "周报", "报销", "机器人回调", "缓存雪崩",
          "飞书审批", "灰度发布", "日志采集", "性能优化", "预算", "招聘"]  # fmt: skip
ERRORS = ["ERR_CONN_RESET", "ECONNREFUSED", "HTTP 502", "OOMKilled", "TimeoutError",
          "SQLSTATE 40001"]  # fmt: skip
PATHS = ["src/server/ws.ts", "bot/channels/feishu.py", "deploy/k8s/values.yaml",
         "web/app/page.tsx"]  # fmt: skip
FUNCS = ["getUserName", "sendMessageCard", "refreshTenantToken", "handleEventCallback"]
TEMPLATES = [
    "{person}说{topic}又出问题了，日志里是 {err}，在 {path} 第{n}行",
    "明天下午{h}点开会讨论{topic}，记得带上上周的数据",
    "Deploy to staging failed: {err} in {path}, rolling back",
    "我把 {func} 改成异步了，麻烦 review 一下 PR #{n}",
    "决定了：{topic}下周{day}上线，{person}负责",
    "监控显示过去一小时大量重连，{err}，怀疑是 {func} 超时",
    "The {topic} latency went up to {n}ms after yesterday's release",
    "{person}: 好的，我看一下 {path}，今天之内给你答复",
    "帮我记一下：{topic}需要在月底前完成，负责人是{person}",
    "Can you check why {func} returns null for tenant {n}?",
    "线上报警 {err}，已经自动扩容到 {h} 个副本",
    "We agreed to freeze the budget for {topic} until Q{q}, {person} will confirm",
    "周{day}的周报：完成了{topic}，下周继续跟进性能问题",
    "ok",
    "收到 👍",
]
# Words the corpus holds: Chinese words inside Chinese sentences, English words, identifiers,
# names, and two-word mixes; and one it lacks ("发票"), as some searches find nothing.
QUERY_POOL = [
    "重连", "部署", "数据库迁移", "周报", "报销", "预算", "灰度发布", "超时", "扩容", "答复",
    "发票", "性能优化", "飞书审批", "张伟", "李娜", "小马", "负责人", "上线",
    "staging", "latency", "review", "budget", "release", "rolling back", "tenant", "Alice",
    "getUserName", "sendMessageCard", "ERR_CONN_RESET", "OOMKilled", "ws.ts", "values.yaml",
    "部署 staging", "Alice 周报", "latency 重连", "budget 预算", "张伟 review",
]  # fmt: skip


def message_text(rnd: random.Random) -> str:
    """One chat message: one template filled in (three times in four), else two joined."""
    parts = [fill(rnd.choice(TEMPLATES), rnd) for _ in range(rnd.choice((1, 1, 1, 2)))]
    return "。".join(parts)


def fill(template: str, rnd: random.Random) -> str:
    return template.format(
        person=rnd.choice(PEOPLE),
        topic=rnd.choice(TOPICS),
        err=rnd.choice(ERRORS),
        path=rnd.choice(PATHS),
        func=rnd.choice(FUNCS),
        n=rnd.randint(1, 500),
        h=rnd.randint(1, 9),
        q=rnd.randint(1, 4),
        day=rnd.choice("一二三四五"),
    )

"""Do this turn's user words ask for a new task? The gate of invariant 9 (docs/design.md):
WorkHub.create refuses a new task unless they do, and the reference router (and a model's
proposal, bot/workhub/model_router.py) proposes `new` only when they do.

A request is a creation phrase: a verb with a task as its object (新建/开个/另起一个/做一个新的
报表任务, open/start/spin up a task, a separate session), a bare "另起一个" / "开个新的" /
"start a fresh one", "单独跟进" / "track this separately" / "its own task", or a message that
opens with "新任务：" / "new task:". A phrase does not count when

- it is part of a candidate task's name (新任务里那个东西 with a task named 新任务; "the new
  session timeout bug"): the words name that task;
- it is negated, asked about or told in its own clause (不用新开任务, "don't open a new
  task", 要不要单独开个任务, "did you start a new task?", "I've opened a separate thread");
- it describes a thing (新建任务的弹窗: 的 after it).

Creating something that is not a task (新建文件夹, 开发票, "create a new branch") has no task
object and is no request either. The rules were tuned on the tune part of
tests/data/gate_cases.json and measured on its held-out part (README, "Routing to ongoing
tasks").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_OBJECT_ZH = r"(?:任务|会话|线程|工单|task|session|thread)"
_MEASURE = r"(?:一个|一|个)"
_KIND_ZH = r"(?:新的?|单独的?|独立的?|专门的?|另外的?)"
# A few characters that say which task ("报表" in 做一个新的报表任务), never a pointer or 的.
_MODIFIER_ZH = r"[^\s的那这了把，。,.!?！？：:；;]{0,6}?"
# Verbs that make something new on their own, and verbs that need a measure word to
# (开个任务 is a request; 开了, 开的那几个任务 are not).
_MAKE_ZH = (
    r"(?:新建|新开|新起|另起|另开|另外开|单开|单独开|单独建|单独做|重新开|再开|创建|新增"
    r"|open|create|start|spin\s*up|set\s*up)"
)
_MAKE_WITH_MEASURE_ZH = r"(?:开|建|起|做|弄|搞|拉|立|加|来|整)"

_OBJECT_EN = r"(?:task|session|thread|workstream)"
_KIND_EN = r"(?:new|separate|dedicated|fresh|standalone|brand[- ]new)"
_MAKE_EN = (
    r"(?:open|start|create|make|add|begin|launch|file|raise|spin|set|kick)"
    r"(?:\s+(?:up|off))?"
)

CREATION_PHRASES = [
    # 新建一个任务, 开个新任务, 做一个新的报表任务, 帮我 open 一个新 task
    re.compile(
        rf"(?:{_MAKE_ZH}\s*{_MEASURE}?|{_MAKE_WITH_MEASURE_ZH}\s*{_MEASURE})"
        rf"\s*{_KIND_ZH}?\s*{_MODIFIER_ZH}\s*{_OBJECT_ZH}"
    ),
    # 另起一个, 单独开一个跟进装修报价
    # (not 新开一个: what follows is mostly what is opened, 新开一个浏览器标签页)
    re.compile(r"(?:另起|另开|另外开|单独开|单开)\s*(?:一个|个)"),
    # 开个新的 (and nothing after it but the end of the clause)
    re.compile(
        r"(?:开|建|起|来|弄|搞|做|拉)\s*(?:一个|个)?\s*新的?(?=\s*(?:$|[，,。.!！；;：:]|吧))"
    ),
    re.compile(r"单独\s*(?:跟进|track)"),
    # open a task, start a new thread, spin up a session, kick off a new workstream
    re.compile(
        rf"\b{_MAKE_EN}\s+(?:a|an|another|one more|one)\s+(?:{_KIND_EN}\s+)?"
        rf"(?:[\w-]+\s+){{0,2}}?{_OBJECT_EN}s?\b"
    ),
    # a separate session, a dedicated task, a new task
    re.compile(rf"\b(?:a|an|another|one more)\s+{_KIND_EN}\s+(?:[\w-]+\s+)?{_OBJECT_EN}\b"),
    re.compile(r"\b(?:start|open|create|spin up|make)\s+(?:a\s+)?(?:new|fresh|separate)\s+one\b"),
    re.compile(rf"\bits own {_OBJECT_EN}\b"),
    re.compile(r"\btrack(?:ing)?\s+(?:[\w'-]+\s+){0,3}?separately\b"),
    # A message that opens with the noun: "新任务：…", "new task please — …"
    re.compile(r"^(?:新任务|新的任务|新会话)(?=\s*[:：,，—–-])"),
    re.compile(r"^(?:a\s+)?new\s+(?:task|session|thread)(?=(?:\s+please)?\s*[:：,，—–-])"),
]

# Said before the phrase in its own clause, these make it no request: a negation, a
# question whether to (or whether it was done), or telling what was done.
NOT_A_REQUEST = re.compile(
    r"不用|不要|别|不必|无需|不需要|没必要|没有必要|先不|甭|不想|用不着|不打算|不再"
    r"|要不要|该不该|需不需要|是否|用不用"
    r"|\b(?:don'?t|do not|not|no|never|without|rather than|instead of|\w+n't|never mind)\b"
    r"|^\s*(?:should|shall|do|does|did|have|has|had|was|were)\b|\bwhether\b"
    # told, not asked: "I started a new task yesterday", "I've opened a separate thread"
    r"|\b(?:started|opened|created|made|filed|added|launched|spun up|kicked off)\b",
    re.IGNORECASE,
)
# Asked after the phrase in its clause: the phrase says what is asked about (单独跟进这件事的
# 人是谁).
ASKED_ABOUT = re.compile(r"是谁|谁在|为什么|什么时候")
CLAUSE_END = re.compile(r"[，,。.!！?？;；:：\n]")


def asks_for_new(request: str, task_names: Sequence[str]) -> bool:
    """Do the user's words ask for a new task, given the names of the tasks they have?"""
    text = " ".join(request.lower().split())
    names = [" ".join(n.lower().split()) for n in task_names if n.strip()]
    return any(
        not _part_of_a_name(text, m.start(), m.end(), names)
        and not _negated_or_asked(text, m.start(), m.end())
        and not text[m.end() :].lstrip().startswith("的")
        for pattern in CREATION_PHRASES
        for m in pattern.finditer(text)
    )


def _part_of_a_name(text: str, start: int, end: int, names: Sequence[str]) -> bool:
    """The phrase lies inside where the text names a task, or it and the word next to it
    are found in a task's name (the open new task button, a task "Open new task button in
    web console")."""
    for name in names:
        at = text.find(name)
        while at != -1:
            if at <= start and end <= at + len(name):
                return True
            at = text.find(name, at + 1)
    phrase = text[start:end]
    after = re.match(r"\s*[\u3400-\u9fff]{1,2}|\s*[^\s\u3400-\u9fff]+", text[end:])
    before = re.search(r"(?:[\u3400-\u9fff]{1,2}|[^\s\u3400-\u9fff]+)\s*$", text[:start])
    widened = [
        phrase + after.group(0) if after else None,
        before.group(0) + phrase if before else None,
    ]
    return any(w in name for w in widened if w for name in names)


def _negated_or_asked(text: str, start: int, end: int) -> bool:
    before = CLAUSE_END.split(text[:start])[-1]
    after = CLAUSE_END.split(text[end:])[0]
    return NOT_A_REQUEST.search(before) is not None or ASKED_ABOUT.search(after) is not None


# A short yes to an offer the assistant made ("want me to track it as a task?").
AGREES = re.compile(
    r"^\s*(yes|yeah|yep|sure|ok(ay)?|please( do)?|do it|go ahead|track it|好的?|好呀|可以|行|"
    r"嗯|要的?|是的|跟进|麻烦了?)(?=$|[\s,，.。!！?？~、:：;；])",
    re.IGNORECASE,
)
AGREEMENT_CHARS = 60


def agrees(request: str) -> bool:
    """A short reply that says yes (an offer's answer, not a request of its own)."""
    return len(request.strip()) <= AGREEMENT_CHARS and AGREES.match(request) is not None

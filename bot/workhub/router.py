"""The deterministic reference router: recency, name, summary and evidence with fixed weights.

It serves the recall evaluation and is the fallback when the model's routing fails. It only
ever chooses among the candidate set it is given; every doubt ends in `clarify` (invariant
9 in docs/design.md), and `new` needs an explicit request (bot/workhub/new_task.py).

Matching weighs each request token by how rare it is among the candidates (so "bug" in
"Fix bug" and "Fix bug (2)" counts for little and `ERR_CONN_RESET` for a lot). Pointer and
question words are cut out before the request is split into words, a lone Chinese character
counts half, and a candidate whose name carries another version label than the request
("rev C" for "rev A") is ruled out. Each rule was checked on sets written blind (README,
"Routing to ongoing tasks").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from enum import StrEnum

from bot.workhub.candidates import Candidate, CandidateSet
from bot.workhub.new_task import asks_for_new
from storage.search.tokenizer import query_units, tokenize


class Outcome(StrEnum):
    EXISTING = "existing"
    NEW = "new"
    CLARIFY = "clarify"


@dataclass(frozen=True)
class Weights:
    # How much a query unit found in each field counts, from the most to the least reliable.
    name: float = 1.0
    summary: float = 0.7
    evidence: float = 0.55
    recency: float = 0.05
    # Explained weight is the sum of the matched units' rarity, where a unit that only one
    # candidate mentions counts 1 and a unit every candidate mentions close to 0.
    min_content: float = 0.7  # less than that: nothing fits
    min_share: float = 0.3  # nor when most of the request is left unexplained
    margin: float = 0.28  # top two closer than this: ask


@dataclass
class Decision:
    outcome: Outcome
    session_id: str | None = None
    ref: str | None = None
    reason: str = ""
    scores: dict[str, float] = field(default_factory=dict)
    fallback: bool = False  # a model router failed and this is the reference router's answer


REFERENCE_ONLY = re.compile(
    r"(\b(continue|resume|keep going( with)?|back to)\b.*\b(that|this|it|the last|previous)\b"
    r"|\bthat one\b|\bthe one (we|i)\b|继续(刚才|上次|那个|之前)|刚才(那个|的)|上一个|之前那个"
    r"|早上(那个|说的))",
    re.IGNORECASE,
)
# A request that is nothing but "go on".
CONTINUATION = re.compile(r"(继续|接着|\bkeep going\b|\bcontinue\b|\bgo on\b|\bresume\b)", re.I)
# Words that say "this is about a task" rather than which one.
GENERIC = {
    "continue",
    "resume",
    "task",
    "session",
    "please",
    "that",
    "this",
    "one",
    "it",
    "the",
    "let",
    "lets",
    "let's",
    "finish",
    "update",
    "keep",
    "going",
    "with",
    "on",
    "about",
    "继续",
    "一下",
    "跟进",
    "看看",
    "那个",
    "这个",
    "帮",
    "我",
    "请",
    "任务",
    "问题",
    "怎么样",
    "接着",
    "刚才",
    "之前",
    "上次",
    "做完",
    "弄",
    "吧",
    "了",
    "呢",
    "吗",
    "帮我",
}
# English words that ask or point rather than name: "did the laptops arrive?"
GENERIC |= set(
    "did does do done how what when where which who why can could should would any some our "
    "we you your my me us get got now yet still already status going go out".split()
)
# Chinese pointers, pronouns, question and filler words. They are cut out of the request
# before it is split into words, because jieba glues them to the word beside them
# (后端那几台 -> 后端那 / 几台, 帮我写 as one word) and the glued word then matches nothing.
FUNCTION_WORDS = re.compile(
    r"(那个|这个|那些|这些|那张|这张|那条|这条|那几|这几|那边|这边|那次|这次|那件|这件|那份|这份"
    r"|哪个|哪些|哪里|哪儿|到哪|什么|怎么样|怎么|为什么|是不是|有没有|能不能|要不要|可不可以"
    r"|一下|帮我|帮忙|我们|你们|他们|现在|的话|一个|还有|这种|那种)"
)
# A lone Chinese character is mostly a verb or a measure word (看, 做, 改, 第, 个): it counts
# for less than a word.
SINGLE_CHAR_FACTOR = 0.5
# Error codes, paths, ticket numbers: nobody writes them by accident.
IDENTIFIER = re.compile(r"[_./#:]|\d.*[a-z]|[a-z].*\d", re.IGNORECASE)
IDENTIFIER_BOOST = 1.5
RECENT_GAP_HOURS = 3.0
# Labels that tell versions of one thing apart: "rev A" is not the task "PCB 打样 rev C".
VERSION_LABELS = re.compile(
    r"\b(rev)(?:ision)?\.?\s*([a-z0-9]{1,3})\b|\b(v)(\d+(?:\.\d+)*)\b|\b(q)([1-4])\b"
    r"|第\s*(\d+|[一二三四五六七八九十]+)\s*(版|期|轮|批)",
    re.IGNORECASE,
)


def route(
    request: str,
    cset: CandidateSet,
    *,
    use_summaries: bool = True,
    use_evidence: bool = True,
    weights: Weights | None = None,
) -> Decision:
    w = weights or Weights()
    if asks_for_new(request, [c.meta.name for c in cset.candidates]):
        return Decision(Outcome.NEW, reason="the user asked for a new task")
    if not cset.candidates:
        return Decision(Outcome.CLARIFY, reason="no candidates")

    units = request_units(request)
    fields = {c.ref: _fields(c, use_summaries, use_evidence) for c in cset.candidates}
    weight = _unit_weights(units, fields)
    total = sum(weight.values()) or 1.0

    asked = version_labels(request)
    content: dict[str, float] = {}
    scores: dict[str, float] = {}
    for c in cset.candidates:
        name, summary, evidence = fields[c.ref]
        if _another_version(asked, version_labels(c.meta.name)):
            content[c.ref], scores[c.ref] = 0.0, 0.0
            continue
        found_name = {u for u in units if _matches(u, name)}
        found_summary = {u for u in units if _matches(u, summary)} - found_name
        found_evidence = {u for u in units if _matches(u, evidence)} - found_name - found_summary
        explained = (
            w.name * sum(weight[u] for u in found_name)
            + w.summary * sum(weight[u] for u in found_summary)
            + w.evidence * sum(weight[u] for u in found_evidence)
        )
        content[c.ref] = explained
        recency = (len(cset.candidates) - c.position + 1) / len(cset.candidates)
        scores[c.ref] = content[c.ref] + w.recency * recency

    ranked = sorted(cset.candidates, key=lambda c: scores[c.ref], reverse=True)
    best = ranked[0]
    if not units and CONTINUATION.search(request):
        return _most_recent(cset, scores)  # nothing but "继续" / "keep going"
    if content[best.ref] < w.min_content or content[best.ref] / total < w.min_share:
        if REFERENCE_ONLY.search(request):
            return _most_recent(cset, scores)
        written = _written_out(request, cset)
        if written is not None:
            return Decision(
                Outcome.EXISTING, written.meta.id, written.ref, "the request writes out its name",
                scores,
            )  # fmt: skip
        return Decision(Outcome.CLARIFY, reason="nothing fits the request", scores=scores)
    if len(ranked) > 1 and content[best.ref] - content[ranked[1].ref] < w.margin:
        return Decision(Outcome.CLARIFY, reason="two candidates fit about equally", scores=scores)
    return Decision(Outcome.EXISTING, best.meta.id, best.ref, "best match", scores)


def version_labels(text: str) -> dict[str, str]:
    """{"rev": "a"}, {"v": "2"}, {"q": "3"}, {"版": "2"} found in a text."""
    labels: dict[str, str] = {}
    for m in VERSION_LABELS.finditer(text):
        if m.group(1):
            labels["rev"] = m.group(2).lower()
        elif m.group(3):
            labels["v"] = m.group(4)
        elif m.group(5):
            labels["q"] = m.group(6)
        else:
            labels[m.group(8)] = m.group(7)
    return labels


def _another_version(asked: dict[str, str], named: dict[str, str]) -> bool:
    return any(kind in named and named[kind] != value for kind, value in asked.items())


def request_units(request: str) -> list[str]:
    """The words of the request that could tell one task from another."""
    cleaned = FUNCTION_WORDS.sub(" ", request)
    return [u for u in query_units(cleaned) if u.lower() not in GENERIC]


WRITTEN_NAME_CHARS = 3  # 任务 alone is a word, not a name


def _written_out(request: str, cset: CandidateSet) -> Candidate | None:
    """The one task whose name has no word the scoring can see (新任务: 新 counts half, 任务
    not at all) and that the request writes out whole: 新任务里那个东西你再看看. Not when
    another task's name holds it too (新任务 and 新任务二)."""
    text = " ".join(request.lower().split())
    names = {c.ref: " ".join(c.meta.name.lower().split()) for c in cset.candidates}
    written = [
        c
        for c in cset.candidates
        if len(names[c.ref]) >= WRITTEN_NAME_CHARS
        and names[c.ref] in text
        and not any(_tells_apart(u) for u in request_units(c.meta.name))
    ]
    if len(written) != 1:
        return None
    only = written[0]
    if any(names[only.ref] in n for ref, n in names.items() if ref != only.ref):
        return None
    return only


def _tells_apart(unit: str) -> bool:
    """A unit that can decide a match alone: a word, not a lone Chinese character."""
    return not (len(unit) == 1 and "\u3400" <= unit <= "\u9fff")


def _most_recent(cset: CandidateSet, scores: dict[str, float]) -> Decision:
    """ "Continue that one": the most recent, if it is clearly the most recent."""
    first = cset.candidates[0]
    if first.recency != "today":
        return Decision(Outcome.CLARIFY, reason="nothing active today to continue", scores=scores)
    if len(cset.candidates) > 1:
        gap = first.meta.activity_at - cset.candidates[1].meta.activity_at
        if gap.total_seconds() < RECENT_GAP_HOURS * 3600:
            return Decision(Outcome.CLARIFY, reason="two tasks were active just now", scores=scores)
    return Decision(Outcome.EXISTING, first.meta.id, first.ref, "the most recent task", scores)


def _fields(
    c: Candidate, use_summaries: bool, use_evidence: bool
) -> tuple[set[str], set[str], set[str]]:
    name = set(tokenize(f"{c.meta.name} {c.meta.workspace or ''}"))
    summary = set(tokenize(c.summary)) if (use_summaries and c.summary) else set()
    evidence = (
        set(tokenize(" ".join(c.evidence.excerpts))) if (use_evidence and c.evidence) else set()
    )
    return name, summary, evidence


def _matches(unit: str, tokens: set[str]) -> bool:
    """A unit is found when it is a token of the field, or (a longer Chinese word jieba did
    not cut the same way) when all its character pairs are."""
    unit = unit.lower()
    if unit in tokens:
        return True
    if len(unit) >= 3 and all("\u3400" <= ch <= "\u9fff" for ch in unit):
        return all(unit[i : i + 2] in tokens for i in range(len(unit) - 1))
    return False


def _unit_weights(
    units: list[str], fields: dict[str, tuple[set[str], set[str], set[str]]]
) -> dict[str, float]:
    """Rarer among the candidates = more telling (how many candidates mention the unit)."""
    n = len(fields)
    unique = math.log(1 + n / 2)
    weights = {}
    for unit in units:
        df = sum(
            1
            for name, summary, evidence in fields.values()
            if _matches(unit, name | summary | evidence)
        )
        weight = math.log(1 + n / (1 + df)) / unique
        if IDENTIFIER.search(unit):
            weight *= IDENTIFIER_BOOST
        elif len(unit) == 1 and "\u3400" <= unit <= "\u9fff":
            weight *= SINGLE_CHAR_FACTOR
        weights[unit] = weight
    return weights

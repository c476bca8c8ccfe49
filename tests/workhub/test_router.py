"""The reference router: explicit new, clarify on doubt, rare words weigh more."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.llm.client import MemoryRecorder, ModelClient
from bot.llm.scripted import ScriptedProvider
from bot.workhub.candidates import Evidence, SessionMeta, build_set
from bot.workhub.model_router import ModelRouterAdapter
from bot.workhub.new_task import agrees
from bot.workhub.router import Outcome, route

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def s(i: str, name: str, minutes_ago: float) -> SessionMeta:
    return SessionMeta(
        id=i,
        name=name,
        workspace="infra",
        state="active",
        created_at=NOW - timedelta(days=9),
        last_message_at=NOW - timedelta(minutes=minutes_ago),
    )


def test_an_explicit_request_for_a_new_task_is_new() -> None:
    cset = build_set([s("a", "Redis timeout", 5)], now=NOW, tz=UTC)
    assert route("新建一个任务：跟进 Redis timeout", cset).outcome is Outcome.NEW


def test_words_inside_a_tasks_own_name_do_not_ask_for_a_new_task() -> None:
    """Misroutes found by trying it: "new" / 新建 in a task's name read as a request."""
    cset = build_set(
        [
            s("a", "New session timeout bug", 5),
            s("b", "新建用户接口报错", 9),
            s("c", "Billing", 20),
        ],
        now=NOW,
        tz=UTC,
    )
    named_en = route("how is the new session timeout bug going?", cset)
    named_zh = route("新建用户接口报错那个问题怎么样了", cset)
    assert (named_en.outcome, named_en.session_id) == (Outcome.EXISTING, "a")
    assert (named_zh.outcome, named_zh.session_id) == (Outcome.EXISTING, "b")
    assert route("新建一个任务：整理发票", cset).outcome is Outcome.NEW
    assert route("start a new task for the invoices", cset).outcome is Outcome.NEW


def test_a_distinctive_name_wins_and_generic_words_do_not_decide() -> None:
    cset = build_set(
        [s("a", "Fix bug in billing export", 50), s("b", "Fix bug in ws.ts", 10)], now=NOW, tz=UTC
    )
    decision = route("continue the billing export bug", cset)
    assert (decision.outcome, decision.session_id) == (Outcome.EXISTING, "a")


def test_two_equally_good_candidates_mean_clarify() -> None:
    cset = build_set([s("a", "Weekly report", 50), s("b", "Weekly report", 49)], now=NOW, tz=UTC)
    assert route("update the weekly report", cset).outcome is Outcome.CLARIFY


def test_nothing_that_fits_means_clarify_never_new() -> None:
    cset = build_set([s("a", "Redis timeout", 5)], now=NOW, tz=UTC)
    assert route("book a flight to Chengdu", cset).outcome is Outcome.CLARIFY


def test_evidence_breaks_a_tie_that_names_cannot() -> None:
    sessions = [s("a", "发布准备", 30), s("b", "发布准备 v2", 20)]
    evidence = {"a": Evidence(0.7, ("ERR_CONN_RESET 在 ws.ts 复现",))}
    cset = build_set(sessions, now=NOW, tz=UTC, evidence=evidence, evidence_status="ok")
    decision = route("ERR_CONN_RESET 那个问题怎么样了", cset)
    assert (decision.outcome, decision.session_id) == (Outcome.EXISTING, "a")
    assert (
        route("ERR_CONN_RESET 那个问题怎么样了", cset, use_evidence=False).outcome
        is Outcome.CLARIFY
    )


def test_continue_that_one_means_the_clearly_most_recent() -> None:
    clear = build_set([s("a", "Redis timeout", 5), s("b", "Billing", 600)], now=NOW, tz=UTC)
    close = build_set([s("a", "Redis timeout", 5), s("b", "Billing", 20)], now=NOW, tz=UTC)
    assert route("接着刚才那个", clear).session_id == "a"
    assert route("接着刚才那个", close).outcome is Outcome.CLARIFY


def test_a_bare_go_on_means_the_clearly_most_recent_but_a_named_topic_is_not_go_on() -> None:
    """接着 after words no task matches is about that topic (here an archived task), not a
    reference to whatever was most recent."""
    clear = build_set([s("a", "Redis timeout", 5), s("b", "Billing", 600)], now=NOW, tz=UTC)
    for bare in ("继续", "接着", "keep going"):
        assert route(bare, clear).session_id == "a", bare
    for topic in ("CDN 回源失败接着查", "年终奖理财那个方案接着弄"):
        assert route(topic, clear).outcome is Outcome.CLARIFY, topic


def test_pointer_and_question_words_do_not_hide_the_word_they_are_glued_to() -> None:
    """jieba cuts 后端那几台 as 后端那 / 几台 and 帮我写 as one word; cut out first, 后端 and
    发言稿 are found."""
    sessions = [s("a", "后端扩容", 5), s("b", "家长会发言稿", 300), s("c", "Billing", 20)]
    cset = build_set(sessions, now=NOW, tz=UTC)
    assert route("后端那几台现在什么情况", cset).session_id == "a"
    assert route("发言稿帮我写一下吧", cset).session_id == "b"


def test_a_lone_verb_in_a_log_line_does_not_tip_two_tasks_with_one_name() -> None:
    """看 ("look") appearing in one task's log is no reason to pick it."""
    sessions = [s("a", "体检报告解读", 30), s("b", "体检报告解读", 40)]
    evidence = {"b": Evidence(0.5, ("帮我看下去年的体检报告",))}
    cset = build_set(sessions, now=NOW, tz=UTC, evidence=evidence, evidence_status="ok")
    assert route("体检报告那个继续看", cset).outcome is Outcome.CLARIFY


def test_two_tasks_with_one_name_mean_a_question_even_when_one_is_old() -> None:
    """This year's checkup or last year's? Two blind-written sets disagreed, so we ask."""
    cset = build_set(
        [s("a", "Weekly metrics email", 60), s("b", "Weekly metrics email", 60 * 24 * 30)],
        now=NOW,
        tz=UTC,
    )
    assert route("send out the weekly metrics email", cset).outcome is Outcome.CLARIFY


def test_another_version_of_the_thing_asked_for_is_not_it() -> None:
    """ "rev A" when only rev B and rev C are among the candidates (rev A is further back)."""
    cset = build_set(
        [s("c", "PCB 打样 rev C", 5), s("b", "PCB 打样 rev B", 60), s("q", "Q3 预算", 90)],
        now=NOW,
        tz=UTC,
    )
    assert route("rev A 的阻抗测试报告板厂给了吗", cset).outcome is Outcome.CLARIFY
    assert route("rev B 的板子到了吗", cset).session_id == "b"
    assert route("Q4 预算做完了吗", cset).outcome is Outcome.CLARIFY
    assert route("Q3 预算做完了吗", cset).session_id == "q"


@pytest.mark.parametrize(
    ("reply", "says_yes"),
    [
        ("yes, track it", True),
        ("Sure.", True),
        ("好的，跟进一下", True),
        ("可以", True),
        ("yesterday was fine", False),
        ("no thanks", False),
        ("好多事情要做，帮我看一下预算", False),
        ("ok " + "and also look into the vendor contract and the budget " * 2, False),
    ],
)
def test_only_a_short_yes_counts_as_agreeing_to_an_offer(reply: str, says_yes: bool) -> None:
    assert agrees(reply) is says_yes


@pytest.mark.parametrize(
    "answer",
    ['{"outcome": ' + "[" * 50_000 + "]" * 50_000 + "}", '{"outcome": "maybe"}', "{}"],
)
async def test_a_model_answer_that_is_no_routing_object_falls_back_to_the_reference_router(
    answer: str,
) -> None:
    """JSON nested past the parser, an unknown outcome, none: the reference router decides,
    and the turn goes on (the parser's RecursionError failed it)."""
    model = ScriptedProvider([ScriptedProvider.text(answer)])
    router = ModelRouterAdapter(ModelClient(model, MemoryRecorder()), UTC)
    decision = await router(
        "how is the deploy pipeline going",
        build_set([s("1", "deploy pipeline", 5)], now=NOW, tz=UTC),
    )
    assert decision.fallback is True
    assert decision.outcome is Outcome.EXISTING and decision.session_id == "1"

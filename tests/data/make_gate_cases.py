"""Generate ``tests/data/gate_cases.json``: does a user's message ask for a new task?

The cases of the new-task gate (``bot/workhub/new_task.py``), written by hand BEFORE the gate
was rewritten for issue #38, and split by a seeded draw into a ``tune`` part and a
``heldout`` part before any tuning: the gate was tuned looking only at the tune part, and the
held-out part was run once, at the end, for the figure the README gives.

Each case is a message, the names of the requester's candidate tasks when it was sent, and
the answer a careful human assistant would give to "did these words ask me to start a new
task?": ``true`` only for an explicit request (creation verbs and phrases in Chinese and
English, "单独跟进", "track this separately", a noun-led "新任务：…"). Words that name an
existing task, negations ("不用新开任务", "don't open a new task"), questions about whether
to, talk of tasks made earlier, and creating something that is not a task (a folder, an
invoice, a meeting, a branch) are ``false``. Whether the gate then refuses because the words
also name an existing task is another rule (``request_names_a_task``) and not judged here.
Two noun-led cases ("新任务：…", gate-022 and gate-041) were first written beside a task named
新任务, where the words name that task (the rule the issue sets); before the gate was written
they were moved to the snapshot without it, which left the split as drawn.

Tags: ``zh`` / ``en`` / ``mixed``; ``issue`` (the phrases of issue #38, always in ``tune``,
they were seen); ``probe`` (written after the held-out part was measured, tuning cases);
``names_a_task`` (a task's name holds creation words); ``negation``;
``question`` (asks whether, or asks about the past); ``past`` (a task made earlier);
``not_a_task`` (creating something else); ``separately``; ``noun_led`` ("新任务：…");
``polite`` ("能帮我…吗", "could you…").

Run: ``.venv/bin/python tests/data/make_gate_cases.py``
"""

from __future__ import annotations

import json
import random
from pathlib import Path

SCHEMA = "maka.new-task-gate.v1"
SEED = 20261205
HELDOUT_SHARE = 0.4
OUT = Path(__file__).with_name("gate_cases.json")

# The requester's candidate tasks, by snapshot.
TASKS: dict[str, list[str]] = {
    "zh": [
        "新任务",
        "季度报表",
        "新建用户接口报错",
        "新开门店选址",
        "发票报销",
        "新员工入职",
        "年会筹备",
    ],
    "en": [
        "New session timeout bug",
        "Q3 report",
        "Open new task button in web console",
        "Start new hire onboarding",
        "Separate billing for EU",
        "Create task API rate limit",
        "Spin up staging cluster",
        "Vendor refund",
    ],
    "mixed": [
        "New task template",
        "新建任务弹窗样式",
        "Kafka lag 告警",
        "AWS 账单",
        "单独部署方案",
    ],
    # The same without the task named 新任务, where "新任务：…" can only be a request.
    "zh_no_new_task": [
        "季度报表",
        "新建用户接口报错",
        "新开门店选址",
        "发票报销",
        "新员工入职",
        "年会筹备",
    ],
    "probe": ["新任务", "Q3 report", "New session timeout bug"],
    "none": [],
}

# (snapshot, message, asks for a new task, tags)
CASES: list[tuple[str, str, bool, list[str]]] = [
    # --- the phrases
    ("zh", "做一个新的报表任务", True, ["zh", "issue"]),
    ("en", "let's open a task for the office move", True, ["en", "issue"]),
    ("zh", "单独开个任务跟进一下供应商的退款", True, ["zh", "issue", "separately"]),
    (
        "en",
        "track this separately: the landlord's deposit dispute",
        True,
        ["en", "issue", "separately"],
    ),
    ("zh", "新任务里那个东西你再看看", False, ["zh", "issue", "names_a_task"]),
    (
        "en",
        "any news on the new session timeout bug?",
        False,
        ["en", "issue", "names_a_task", "question"],
    ),
    # --- Chinese: asks for a new task
    ("zh", "另起一个任务，整理年会的节目单", True, ["zh"]),
    ("zh", "帮我新建个任务：调研一下外卖平台的抽成", True, ["zh"]),
    ("zh", "开个任务跟进办公室网络改造", True, ["zh"]),
    ("zh", "再开一个任务，专门做竞品分析", True, ["zh"]),
    ("zh", "建个任务吧，下周团建要订场地", True, ["zh"]),
    ("zh", "另开一个任务跟这个合同", True, ["zh"]),
    ("zh", "新开一个任务：准备周五的董事会材料", True, ["zh"]),
    ("zh", "麻烦开一个新任务，帮我盯一下签证进度", True, ["zh", "polite"]),
    ("zh", "起一个新任务，把家里的保险单整理一下", True, ["zh"]),
    ("zh", "这件事单独开个任务吧", True, ["zh", "separately"]),
    ("zh", "创建一个任务，每周一提醒我交周报", True, ["zh"]),
    ("zh", "开个新的，专门处理海关退货", True, ["zh"]),
    ("zh", "这个另起一个吧，跟之前的不是一回事", True, ["zh"]),
    ("zh", "给我单独建一个任务跟进这个 bug", True, ["zh", "separately"]),
    ("zh", "拉一个新任务出来，处理年假调休", True, ["zh"]),
    ("zh_no_new_task", "新任务：整理三月份的差旅发票", True, ["zh", "noun_led"]),
    ("zh", "单独跟进一下这个投诉，开个任务", True, ["zh", "separately"]),
    ("zh", "弄个新任务，盯一下服务器续费", True, ["zh"]),
    ("zh", "另外开个任务跟进法务那边的回复", True, ["zh"]),
    ("zh", "能帮我开个任务跟进一下房贷利率吗", True, ["zh", "polite"]),
    ("zh", "把这个拆出来单独做一个任务", True, ["zh", "separately"]),
    ("zh", "重新开一个任务吧，上一个已经乱了", True, ["zh"]),
    ("zh", "给这个事开个单独的任务", True, ["zh", "separately"]),
    ("zh", "单开一个任务做年度预算", True, ["zh", "separately"]),
    ("zh", "新起一个任务：跟进驾照换证", True, ["zh"]),
    ("zh", "这个拎出来单独跟进", True, ["zh", "separately"]),
    ("zh", "帮我建一个新任务，比较三家保险公司的报价", True, ["zh"]),
    ("zh", "开一个任务，每天早上汇总一下舆情", True, ["zh"]),
    ("zh", "新建任务：清点仓库里的旧电脑", True, ["zh"]),
    ("zh", "请新开个任务，跟进一下商标注册", True, ["zh", "polite"]),
    ("zh", "这个问题另起一个任务单独处理", True, ["zh", "separately"]),
    ("zh", "做个新任务出来，专门追那笔尾款", True, ["zh"]),
    ("zh", "新建一个任务，跟进新建用户接口报错的回归测试", True, ["zh", "names_a_task"]),
    (
        "zh",
        "另起一个任务，新开门店选址里的第二个城市单独做",
        True,
        ["zh", "names_a_task", "separately"],
    ),
    (
        "zh_no_new_task",
        "新任务：把新员工入职的材料翻译成英文",
        True,
        ["zh", "noun_led", "names_a_task"],
    ),
    ("none", "开个新任务吧，帮我找个周末的羽毛球场", True, ["zh"]),
    ("none", "单独开一个跟进装修报价", True, ["zh", "separately"]),
    # --- Chinese: does not ask for a new task
    ("zh", "新任务进展怎么样了", False, ["zh", "names_a_task", "question"]),
    ("zh", "新任务那边还差什么材料", False, ["zh", "names_a_task", "question"]),
    ("zh", "把新任务和季度报表合并成一个", False, ["zh", "names_a_task"]),
    ("zh", "季度报表那个任务做完了吗", False, ["zh", "question"]),
    ("zh", "昨天你新建的那个任务怎么样了", False, ["zh", "past", "question"]),
    ("zh", "不用新开任务，放到年会筹备里就行", False, ["zh", "negation"]),
    ("zh", "别另起任务了，就在发票报销里继续", False, ["zh", "negation"]),
    ("zh", "不要单独开任务，这个跟季度报表是一回事", False, ["zh", "negation", "separately"]),
    ("zh", "先不开新任务，等我确认了再说", False, ["zh", "negation"]),
    ("zh", "没必要开个新任务吧", False, ["zh", "negation"]),
    ("zh", "任务太多了，先别开新的", False, ["zh", "negation"]),
    ("zh", "新任务别建了，直接在发票报销里弄", False, ["zh", "negation", "names_a_task"]),
    ("zh", "新建用户接口报错那个问题修好了吗", False, ["zh", "names_a_task", "question"]),
    ("zh", "新开门店选址的报告出来了没", False, ["zh", "names_a_task", "question"]),
    ("zh", "新开门店选址那个，再加两个备选商场", False, ["zh", "names_a_task"]),
    ("zh", "新员工入职材料准备好了吗", False, ["zh", "names_a_task", "question"]),
    ("zh", "帮我在共享盘新建一个文件夹", False, ["zh", "not_a_task"]),
    ("zh", "帮我开一张发票，抬头写公司全称", False, ["zh", "not_a_task"]),
    ("zh", "开个会讨论一下年会的事", False, ["zh", "not_a_task"]),
    ("zh", "开个新的会议室链接发我", False, ["zh", "not_a_task"]),
    ("zh", "我新建了一个群，你看到了吗", False, ["zh", "past", "not_a_task"]),
    ("zh", "新开的那家店生意怎么样", False, ["zh", "question"]),
    ("zh", "单独跟客户说一下价格的事", False, ["zh"]),
    ("zh", "要不要单独开个任务？你觉得呢", False, ["zh", "question", "separately"]),
    ("zh", "你开的那几个任务都怎么样了", False, ["zh", "past", "question"]),
    ("zh", "任务列表里还有几个没完成？", False, ["zh", "question"]),
    ("zh", "这个任务先暂停一下", False, ["zh"]),
    ("zh", "重新开始吧，季度报表从头算一遍", False, ["zh"]),
    ("zh", "上次新建任务的时候报错了，帮我看看", False, ["zh", "past"]),
    ("zh", "年会筹备那个，再开一个节目报名表", False, ["zh", "not_a_task"]),
    ("zh", "单独跟进这件事的人是谁？", False, ["zh", "question", "separately"]),
    ("zh", "发票报销继续跟进一下", False, ["zh"]),
    ("none", "明天提醒我交房租", False, ["zh"]),
    # --- English: asks for a new task
    ("en", "spin up a task for the Berlin trip", True, ["en"]),
    ("en", "can you start a new thread for the hiring plan?", True, ["en", "polite"]),
    ("en", "open a separate task for the SSO migration", True, ["en", "separately"]),
    ("en", "please create a task to chase the unpaid invoices", True, ["en", "polite"]),
    ("en", "make this its own task", True, ["en", "separately"]),
    ("en", "new task: compare the three CRM quotes", True, ["en", "noun_led"]),
    ("en", "kick off a new workstream for the Q4 budget", True, ["en"]),
    ("en", "Let's track the printer issue as a separate task", True, ["en", "separately"]),
    ("en", "set up a task to remind me about the passport renewal", True, ["en"]),
    ("en", "start a fresh one for the audit prep", True, ["en"]),
    ("en", "I want a separate session for the board deck", True, ["en", "separately"]),
    ("en", "file this as a new task please", True, ["en", "polite"]),
    ("en", "open up another task for the landlord dispute", True, ["en"]),
    ("en", "split this out into its own task", True, ["en", "separately"]),
    ("en", "add a task: renew the domain before June", True, ["en", "noun_led"]),
    ("en", "could you spin up a session to look at the churn numbers?", True, ["en", "polite"]),
    ("en", "track it separately please", True, ["en", "separately"]),
    ("en", "Please make a new task out of this.", True, ["en", "polite"]),
    ("en", "Start tracking the visa application as its own task.", True, ["en", "separately"]),
    ("en", "Can we have a dedicated task for the SOC2 evidence?", True, ["en", "polite"]),
    ("en", "New session please: draft the newsletter", True, ["en", "noun_led"]),
    ("en", "I'd like to open a new task about the apartment search", True, ["en"]),
    ("en", "create another task for the offsite catering", True, ["en"]),
    (
        "en",
        "start a new task for the retro on the new session timeout bug",
        True,
        ["en", "names_a_task"],
    ),
    ("en", "open a new task: Q3 report follow-ups for sales", True, ["en", "names_a_task"]),
    (
        "en",
        "let's spin up a separate thread for the vendor refund escalation",
        True,
        ["en", "separately", "names_a_task"],
    ),
    ("none", "Start a new task to plan mum's birthday dinner", True, ["en"]),
    ("none", "track this separately — the gym membership cancellation", True, ["en", "separately"]),
    # --- English: does not ask for a new task
    ("en", "is the New session timeout bug fixed yet?", False, ["en", "names_a_task", "question"]),
    ("en", "don't open a new task, just add it to the Q3 report", False, ["en", "negation"]),
    (
        "en",
        "no need for a separate task, it belongs to the vendor refund",
        False,
        ["en", "negation", "separately"],
    ),
    ("en", "what happened to the task you created yesterday?", False, ["en", "past", "question"]),
    ("en", "did you start a new task for the invoices?", False, ["en", "past", "question"]),
    ("en", "how many tasks are open right now?", False, ["en", "question"]),
    (
        "en",
        "the open new task button in the web console is broken again",
        False,
        ["en", "names_a_task"],
    ),
    ("en", "open a new tab with the dashboard", False, ["en", "not_a_task"]),
    ("en", "create a new branch for the hotfix", False, ["en", "not_a_task"]),
    ("en", "start the Q3 report over from scratch", False, ["en"]),
    ("en", "let's start with the budget numbers", False, ["en"]),
    ("en", "start new hire onboarding: where are we?", False, ["en", "names_a_task", "question"]),
    ("en", "should we open a separate task for this?", False, ["en", "question", "separately"]),
    ("en", "I opened a ticket with the vendor about it", False, ["en", "past"]),
    ("en", "keep this in the Q3 report, not a new task", False, ["en", "negation"]),
    (
        "en",
        "without creating another task, can you check the refund status?",
        False,
        ["en", "negation"],
    ),
    ("en", "Create task API rate limit — any update?", False, ["en", "names_a_task", "question"]),
    (
        "en",
        "the separate billing for EU thing, did finance sign off?",
        False,
        ["en", "names_a_task", "question"],
    ),
    ("en", "spin up staging cluster: is it done?", False, ["en", "names_a_task", "question"]),
    ("en", "rather than a new task, put it under the Q3 report", False, ["en", "negation"]),
    ("en", "never mind the new task, continue the vendor refund", False, ["en", "negation"]),
    ("en", "I don't want a new task for this", False, ["en", "negation"]),
    ("en", "No new task, it's part of the Q3 report.", False, ["en", "negation"]),
    ("en", "spin up a new VM for the load test", False, ["en", "not_a_task"]),
    (
        "en",
        "the new session timeout bug is back, can you check the logs?",
        False,
        ["en", "names_a_task"],
    ),
    ("none", "remind me to call the dentist tomorrow", False, ["en"]),
    # --- mixed Chinese and English
    ("mixed", "帮我 open 一个新 task，跟一下 AWS 账单的异常", True, ["mixed"]),
    ("mixed", "这个 separate 一下，单独开个 session", True, ["mixed", "separately"]),
    ("mixed", "单独 track 一下 Kafka 消费延迟，开个任务", True, ["mixed", "separately"]),
    ("mixed", "new task：整理 Grafana 看板", True, ["mixed", "noun_led"]),
    (
        "mixed",
        "单独开个任务，跟进单独部署方案的压测",
        True,
        ["mixed", "names_a_task", "separately"],
    ),
    ("mixed", "spin up 一个 task 看一下 CDN 的费用", True, ["mixed"]),
    ("mixed", "New task template 加一个截止日期字段", False, ["mixed", "names_a_task"]),
    ("mixed", "新建任务弹窗样式改好了没", False, ["mixed", "names_a_task", "question"]),
    ("mixed", "单独部署方案那个评审过了吗", False, ["mixed", "names_a_task", "question"]),
    ("mixed", "不用 new task，放到 AWS 账单里", False, ["mixed", "negation"]),
    ("mixed", "Kafka lag 告警那个 task 继续跟", False, ["mixed"]),
    ("mixed", "那个新建任务的弹窗，字体再调大一点", False, ["mixed", "names_a_task"]),
]

# Written after the held-out part was measured, to look for gaps: tuning cases from the
# start (tag ``probe``), outside the seeded draw, so the split above is as it was drawn.
PROBE: list[tuple[str, str, bool, list[str]]] = [
    ("probe", "帮我起个新任务", True, ["zh", "probe"]),
    ("probe", "这事儿单独立个项吧", True, ["zh", "probe", "separately"]),
    ("probe", "另建一个任务", True, ["zh", "probe"]),
    ("probe", "能不能新开一个 session 专门聊这个", True, ["mixed", "probe", "polite"]),
    ("probe", "我想新建一个任务", True, ["zh", "probe"]),
    ("probe", "请帮我创建任务：写周报", True, ["zh", "probe", "polite"]),
    ("probe", "开一个新的 thread 讨论预算", True, ["mixed", "probe"]),
    ("probe", "let's make a new task for this", True, ["en", "probe"]),
    ("probe", "Could you open one more task for the tax filing?", True, ["en", "probe", "polite"]),
    ("probe", "put this in a new task", True, ["en", "probe"]),
    ("probe", "can you track the refund separately?", True, ["en", "probe", "separately"]),
    ("probe", "we need a new task for the audit", True, ["en", "probe"]),
    ("probe", "new thread: vendor contract", True, ["en", "probe", "noun_led"]),
    ("probe", "open a ticket for the printer jam", False, ["en", "probe", "not_a_task"]),
    ("probe", "I started a new task yesterday", False, ["en", "probe", "past"]),
    ("probe", "I've opened a separate thread with legal", False, ["en", "probe", "past"]),
    ("probe", "不需要另起一个", False, ["zh", "probe", "negation"]),
    ("probe", "这个不用单独跟进", False, ["zh", "probe", "negation"]),
    ("probe", "你之前新建的任务呢", False, ["zh", "probe", "past", "question"]),
    ("probe", "新建一个任务太麻烦了，直接做吧", False, ["zh", "probe"]),
    ("probe", "新开一个浏览器标签页", False, ["zh", "probe", "not_a_task"]),
    ("probe", "open the Q3 report task", False, ["en", "probe", "names_a_task"]),
    ("probe", "a new task would be overkill, just add it to the Q3 report", False, ["en", "probe"]),
    ("probe", "开个任务都这么难吗", False, ["zh", "probe", "question"]),
    ("probe", "新任务？", False, ["zh", "probe", "names_a_task", "question"]),
    ("probe", "no, don't create another task", False, ["en", "probe", "negation"]),
    ("probe", "start a new task? no, continue the Q3 report", False, ["en", "probe", "negation"]),
]


def main() -> None:
    rng = random.Random(SEED)
    cases = []
    for n, (snapshot, request, asks, tags) in enumerate(CASES + PROBE, 1):
        assert snapshot in TASKS and tags and tags[0] in ("zh", "en", "mixed"), request
        cases.append(
            {
                "id": f"gate-{n:03d}",
                "tasks": snapshot,
                "request": request,
                "asks_for_new": asks,
                "tags": tags,
            }
        )
    # The split, drawn once per language and answer so both parts hold every kind; the
    # issue's phrases were seen, so they are tuning cases.
    strata: dict[tuple[str, bool], list[dict]] = {}
    for case in cases:
        if "issue" in case["tags"] or "probe" in case["tags"]:
            case["part"] = "tune"
        else:
            strata.setdefault((case["tags"][0], case["asks_for_new"]), []).append(case)
    for stratum in strata.values():
        heldout = set(rng.sample(range(len(stratum)), round(len(stratum) * HELDOUT_SHARE)))
        for i, case in enumerate(stratum):
            case["part"] = "heldout" if i in heldout else "tune"
    requests = [c["request"] for c in cases]
    assert len(set(requests)) == len(requests), "a message is written twice"
    data = {"schema": SCHEMA, "tasks": TASKS, "cases": cases}
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    parts = {p: sum(c["part"] == p for c in cases) for p in ("tune", "heldout")}
    print(f"{len(cases)} cases -> {OUT.name}: {parts}")


if __name__ == "__main__":
    main()

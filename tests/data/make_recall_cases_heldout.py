# ruff: noqa: E501
"""Generate ``tests/data/recall_cases_heldout.json``: a held-out, blind recall benchmark.

Same schema and rules as ``make_recall_cases.py`` and ``make_recall_cases_fresh.py``
("maka.recall-eval.v1"), but written *blind*: its author did not read the router, its recall /
evidence / model-routing code or their tests, and did not run the router on these cases, so the
expectations were never tuned to what the router happens to do. People, workspaces, task names
and wording are all new: a hospital IT engineer, a small publishing house editor, an indie game
studio producer (English), a hardware startup's supply-chain lead (window edge), a parent dealing
with two kids' school matters, and a PhD student working late (mixed Chinese/English).

Each snapshot is a frozen list of a user's task Sessions at a given ``now``; each case is a new
user request plus the Session it should be routed to (``existing``), ``new`` (the user explicitly
asked for a new task) or ``clarify`` (ambiguous, or nothing eligible matches). Expectations are
what a careful human assistant would answer; when in doubt, ``clarify``. In particular, two tasks
that match equally well are ``clarify`` even when one of them is much more recent, unless the
request itself says which one ("the latest", "这周的", "tomorrow's").

Beyond the shared tags, this dataset adds:

* ``name_contains_new``: a task whose *name* contains "New" / 新 is referred to by that name
  (existing), or named inside an explicit request for a new task (new);
* ``short_ambiguous`` / ``short_unique``: one- or two-word requests fitting two tasks / one task;
* ``partial_name`` and ``filler_words``: partial names, synonyms, particles (的, 一下, 吧, 呢, 那个);
* ``distractor_evidence``: a word of the request also occurs in another task's logs or messages;
* ``name_over_logs``: a distinctive noun occurs in two tasks, only one task's *name* matches;
* ``bare_reference``: "继续" / "keep going" with no other content;
* ``shared_word``: a request that shares a common word (报告, meeting, 发言稿, 封面) with a task
  but is about something else (clarify).

Content is written by hand; filler sessions, timestamps, states and repetitive log lines come from
a seeded RNG, so the output is byte-for-byte deterministic. The machinery (specs, building,
verification of every expectation against the JSON, writing) is shared in ``recall_kit.py``;
this file adds the checks that go with its own tags (:func:`extra_check`).

Run: ``.venv/bin/python tests/data/make_recall_cases_heldout.py``
"""

from __future__ import annotations

import random
from datetime import datetime
from pathlib import Path

from recall_kit import BASE_TAGS, SIDE_LABEL, Case, Dataset, Filler, Spec, ago, chunk, generate

SEED = 20270917
OUT = Path(__file__).with_name("recall_cases_heldout.json")

ALLOWED_TAGS = BASE_TAGS | {
    # added for this dataset
    "name_contains_new",
    "short_ambiguous",
    "short_unique",
    "partial_name",
    "filler_words",
    "distractor_evidence",
    "name_over_logs",
    "bare_reference",
    "shared_word",
}

WS_SLUG = {
    "信息科": "hit",
    "医务处": "med",
    "个人": "me",
    "编辑部": "ed",
    "发行": "dist",
    "版权": "rights",
    "财务": "fin",
    "gameplay": "gp",
    "build": "bld",
    "liveops": "ops",
    "art": "art",
    "studio": "std",
    "personal": "pers",
    "供应链": "scm",
    "品质": "qa",
    "硬件": "hw",
    "家里": "home",
    "学校": "school",
    "thesis": "th",
    "lab": "lab",
    "admin": "adm",
}

# --------------------------------------------------------------------------------------
# Filler pool: (workspace, name, summary | None, messages)
# --------------------------------------------------------------------------------------

FILLERS: list[Filler] = [
    # --- 信息科 (hospital IT) ---
    (
        "信息科",
        "服务器虚拟化扩容",
        "VMware 集群新增 2 台宿主机，把 40 台虚拟机迁过去。",
        [
            ("user", "虚拟化集群内存快满了"),
            (
                "assistant",
                "现有 6 台宿主机内存使用率 88%，新增 2 台后能降到 65% 左右，迁移放在周末夜间做。",
            ),
        ],
    ),
    (
        "信息科",
        "住院部 Wi-Fi 覆盖",
        "住院部 6-9 楼信号弱，补装 18 个 AP。",
        [
            ("user", "病房里 Wi-Fi 很差，护士推车上的电脑老掉线"),
            (
                "assistant",
                "实测 6-9 楼走廊尽头信号低于 -75dBm，补 18 个吸顶 AP，护理推车和访客网络分开 SSID。",
            ),
        ],
    ),
    (
        "信息科",
        "电子病历评级材料",
        "准备电子病历应用水平分级评价五级的申报材料。",
        [
            ("user", "电子病历评级今年要冲五级"),
            (
                "assistant",
                "五级要求全院统一数据管理和闭环，目前缺输血闭环和手术闭环两项的佐证材料。",
            ),
        ],
    ),
    (
        "信息科",
        "自助机卡纸",
        None,
        [
            ("user", "一楼挂号自助机老是卡纸"),
            (
                "assistant",
                "热敏纸规格不对，供应商送成了 57mm 的。已经换回 80mm，建议耗材走统一采购。",
            ),
        ],
    ),
    (
        "信息科",
        "Oracle 备份策略",
        "RMAN 全量 + 增量备份，异地保留 30 天。",
        [
            ("user", "核心库的备份策略帮我理一下"),
            (
                "assistant",
                "周日全量、每天增量、归档日志每小时一次，备份集同步到分院机房保留 30 天。",
            ),
        ],
    ),
    (
        "信息科",
        "移动护理 PDA 选型",
        "对比三家移动护理 PDA，重点看扫码速度和电池续航。",
        [
            ("user", "护理部想换一批 PDA"),
            (
                "assistant",
                "三家样机都测了：扫腕带速度 A 家最快，续航 B 家最长能撑两个班，价格差 300 元以内。",
            ),
        ],
    ),
    (
        "信息科",
        "挂号小程序高峰卡顿",
        "周一早上 7 点放号时小程序卡顿，加号源缓存。",
        [
            ("user", "周一早上放号的时候小程序卡死了"),
            (
                "assistant",
                "7 点整并发 1.2 万，号源查询直接打到数据库。号源放 Redis 缓存，下单时再扣减，压测能扛 3 万并发。",
            ),
        ],
    ),
    (
        "信息科",
        "终端杀毒统一部署",
        "全院 1,800 台终端统一部署杀毒客户端。",
        [
            ("user", "各科室的电脑杀毒软件五花八门"),
            ("assistant", "统一部署一个客户端，先在行政楼 200 台试点，没问题再推到临床科室。"),
        ],
    ),
    (
        "信息科",
        "手麻系统对接",
        "手术麻醉系统对接 HIS 医嘱和收费。",
        [
            ("user", "手麻系统的收费还是手工录的"),
            (
                "assistant",
                "手麻系统术中用药和耗材可以直接生成医嘱回写 HIS，收费自动带出，接口文档已经要到了。",
            ),
        ],
    ),
    (
        "信息科",
        "机房巡检表",
        None,
        [
            ("user", "机房巡检表做个电子版"),
            (
                "assistant",
                "按温湿度、精密空调、消防、配电、设备告警灯五项，每天两次，扫码填表自动汇总。",
            ),
        ],
    ),
    (
        "信息科",
        "院内邮箱迁移",
        "Exchange 迁到国产邮件系统，计划 3 个月完成。",
        [
            ("user", "院里邮箱要换国产的"),
            ("assistant", "2,300 个邮箱分三批迁，历史邮件保留 3 年，先迁行政和职能部门。"),
        ],
    ),
    # --- 医务处 ---
    (
        "医务处",
        "病案首页填写培训",
        "病案首页主要诊断选择错误率 7%，给临床科室做培训。",
        [
            ("user", "病案首页的主要诊断老是选错"),
            (
                "assistant",
                "抽查 600 份，主要诊断选择错误 42 份，集中在骨科和心内科，培训课件按这两个科的案例来写。",
            ),
        ],
    ),
    (
        "医务处",
        "日间手术病种目录",
        "今年增加 12 个日间手术病种。",
        [
            ("user", "日间手术病种要扩"),
            (
                "assistant",
                "候选 20 个病种，按平均住院日和并发症率筛出 12 个，胆囊切除和白内障优先。",
            ),
        ],
    ),
    (
        "医务处",
        "医师定期考核",
        None,
        [
            ("user", "今年的医师定期考核什么时候开始"),
            ("assistant", "6 月报名，业务水平测评放在 9 月，共 312 名医师参加。"),
        ],
    ),
    (
        "医务处",
        "不良事件上报流程",
        "简化不良事件上报，手机端 3 分钟填完。",
        [
            ("user", "临床嫌不良事件上报太麻烦"),
            ("assistant", "表单从 38 项减到 14 项，其余字段自动带出，手机端 3 分钟能填完。"),
        ],
    ),
    (
        "医务处",
        "临床路径变异分析",
        "一季度临床路径变异率 18%，分析前五个病种。",
        [
            ("user", "临床路径变异率为什么这么高"),
            ("assistant", "变异最多的是社区获得性肺炎，主要原因是入院后加做检查导致住院日超标。"),
        ],
    ),
    (
        "医务处",
        "MDT 会诊排班",
        "多学科会诊排班，每周二、周四下午。",
        [
            ("user", "肿瘤 MDT 的排班排一下"),
            ("assistant", "每周二、周四下午两场，每场固定 5 个学科，影像科和病理科每场都要有人。"),
        ],
    ),
    # --- 个人 (Chinese personal) ---
    (
        "个人",
        "羽毛球场地预订",
        "每周三晚上订两片场地。",
        [
            ("user", "周三晚上的羽毛球场总是订不到"),
            ("assistant", "场馆周一中午 12 点放下周的场，我设了提醒，可以连订 4 周。"),
        ],
    ),
    (
        "个人",
        "宽带续费",
        None,
        [
            ("user", "家里宽带要到期了"),
            ("assistant", "续两年送提速到 1000M，比按年续便宜 240 元。"),
        ],
    ),
    (
        "个人",
        "换季衣物收纳",
        "换季把夏装用真空袋收起来。",
        [
            ("user", "衣柜塞不下了"),
            ("assistant", "夏装真空压缩后放床底收纳箱，常穿的秋装挂起来，不穿的旧衣另外装一袋。"),
        ],
    ),
    (
        "个人",
        "给爸妈设置手机",
        "爸妈手机字体调大、装防诈骗 App。",
        [
            ("user", "爸妈的手机帮我想想怎么设置"),
            ("assistant", "字体调到最大一档、开启长辈模式、关掉应用内购买，再装个反诈 App。"),
        ],
    ),
    (
        "个人",
        "ETC 办理",
        None,
        [
            ("user", "新车要办 ETC"),
            ("assistant", "用信用卡绑定办理免费送设备，自己粘贴激活，大概 3 个工作日寄到。"),
        ],
    ),
    (
        "个人",
        "读书清单",
        "今年读 24 本书，已读 9 本。",
        [
            ("user", "今年的书读到哪了"),
            ("assistant", "已读 9 本，在读《置身事内》，下半年建议穿插几本小说换换脑子。"),
        ],
    ),
    (
        "个人",
        "车险续保",
        "对比三家车险报价，续保截止 7 月 2 日。",
        [
            ("user", "车险快到期了"),
            ("assistant", "三家报价 3,980 到 4,360 元，差别在三者险保额，建议 300 万三者。"),
        ],
    ),
    (
        "个人",
        "跑步配速计划",
        "半马目标 1 小时 55 分，配速 5:27。",
        [
            ("user", "半马想跑进 1 小时 55"),
            (
                "assistant",
                "平均配速 5:27，每周 4 练：1 次间歇、1 次节奏跑、2 次轻松跑，周末拉一次长距离。",
            ),
        ],
    ),
    (
        "个人",
        "充电桩安装",
        "小区车位装充电桩，需要物业同意书。",
        [
            ("user", "车位想装个充电桩"),
            ("assistant", "要先拿物业同意书和车位产权证明，供电局报装大概 2 周，安装半天。"),
        ],
    ),
    (
        "个人",
        "周末做饭计划",
        None,
        [
            ("user", "周末做点什么菜"),
            ("assistant", "周六番茄牛腩加清炒时蔬，周日蒸鲈鱼和排骨藕汤，周五晚上把牛腩先买好。"),
        ],
    ),
    # --- 编辑部 (publishing) ---
    (
        "编辑部",
        "年度选题计划",
        "2028 年选题 24 种：社科 10、文学 8、童书 6。",
        [
            ("user", "明年的选题计划先列个框架"),
            ("assistant", "24 种：社科 10、文学 8、童书 6，其中引进版 7 种，需要在 9 月前报备。"),
        ],
    ),
    (
        "编辑部",
        "丛书体例规范",
        "“城市与人”丛书 6 本的体例：注释和参考文献格式。",
        [
            ("user", "城市与人那套丛书每本的注释格式都不一样"),
            (
                "assistant",
                "定了一份体例说明：脚注每页重新编号，参考文献按作者拼音排序，外文书名用斜体。",
            ),
        ],
    ),
    (
        "编辑部",
        "审读意见汇总",
        None,
        [
            ("user", "外审专家的意见回来了"),
            ("assistant", "三位专家共提 47 条，其中 9 条涉及史实需要作者核实，其余是文字层面。"),
        ],
    ),
    (
        "编辑部",
        "古籍点校项目",
        "《东溪杂录》点校，底本用明刻本。",
        [
            ("user", "东溪杂录用哪个底本"),
            ("assistant", "明万历刻本最完整，清抄本作参校本，异文出校记，全书约 18 万字。"),
        ],
    ),
    (
        "编辑部",
        "译稿质量抽查",
        "抽查三部译稿各 20 页，差错率 0.8‰。",
        [
            ("user", "这几部译稿的质量怎么样"),
            ("assistant", "三部各抽 20 页，差错率 0.8‰，有一部术语前后不统一，需要译者出术语表。"),
        ],
    ),
    (
        "编辑部",
        "童书绘本选题",
        "引进 4 本低幼绘本，评估翻译难度。",
        [
            ("user", "低幼绘本那几本值得引进吗"),
            ("assistant", "4 本里 2 本有大量押韵文字，翻译成本高；另外 2 本图多字少，可以先做。"),
        ],
    ),
    (
        "编辑部",
        "编校差错统计",
        "上半年出版物编校差错率统计，两本超过万分之一。",
        [
            ("user", "上半年的编校质量怎么样"),
            ("assistant", "抽检 30 种，两种差错率超过万分之一，都是标点和数字用法问题。"),
        ],
    ),
    (
        "编辑部",
        "责编工作量统计",
        "按字数和难度系数统计 2026 年责编工作量。",
        [
            ("user", "去年每个责编的工作量统计一下"),
            ("assistant", "按字数乘难度系数算，7 位责编里最高 410 万字、最低 160 万字。"),
        ],
    ),
    # --- 发行 ---
    (
        "发行",
        "电商店庆备货",
        "6 月店庆备货 1.2 万册，重点 20 个品种。",
        [
            ("user", "店庆要备多少货"),
            ("assistant", "按去年店庆销量上浮 20%，备 1.2 万册，重点 20 个品种单独备足两周库存。"),
        ],
    ),
    (
        "发行",
        "馆配书目推送",
        "给 300 家图书馆推送季度馆配书目。",
        [
            ("user", "这个季度的馆配书目整理好了吗"),
            ("assistant", "112 个品种，按中图法分类排好，附上内容简介和馆藏推荐理由。"),
        ],
    ),
    (
        "发行",
        "退货库存清理",
        None,
        [
            ("user", "仓库里退货越堆越多"),
            ("assistant", "5 年以上的退货 2.1 万册，品相好的走特价渠道，破损的报废处理。"),
        ],
    ),
    (
        "发行",
        "上海书展展位",
        "申请 8 月上海书展 36 平米展位。",
        [
            ("user", "上海书展展位申请了吗"),
            ("assistant", "已提交 36 平米标准展位申请，活动区要另外排期，6 月底前确认。"),
        ],
    ),
    (
        "发行",
        "直播带货选品",
        "选 15 个品种给合作主播，折扣 6.5 折起。",
        [
            ("user", "直播间要我们的书单"),
            (
                "assistant",
                "选了 15 个品种，以文学和童书为主，折扣 6.5 折起，库存都在 2000 册以上。",
            ),
        ],
    ),
    # --- 版权 ---
    (
        "版权",
        "繁体版授权",
        "《东溪杂录》授权台湾出版繁体版，预付金 3000 美元。",
        [
            ("user", "台湾那家出版社想出东溪杂录的繁体版"),
            ("assistant", "对方报预付金 3000 美元、版税 8%，授权期 5 年，可以接受。"),
        ],
    ),
    (
        "版权",
        "有声书改编授权",
        None,
        [
            ("user", "有声平台想买两本书的有声改编权"),
            ("assistant", "两本作者都同意，平台报价每本 2 万，分成 10%，授权期 3 年。"),
        ],
    ),
    (
        "版权",
        "影视改编咨询",
        "一部小说的影视改编权咨询，对方要 5 年独家。",
        [
            ("user", "有影视公司问小说改编权"),
            ("assistant", "对方要 5 年独家，建议限定为网络剧，保留电影改编权，先签意向书。"),
        ],
    ),
    # --- 财务 ---
    (
        "财务",
        "增值税发票认证",
        "本月进项发票认证 86 张。",
        [
            ("user", "这个月的进项发票认证了吗"),
            ("assistant", "86 张已勾选认证，有 3 张印厂的专票信息有误，已经退回重开。"),
        ],
    ),
    (
        "财务",
        "作者稿酬个税代扣",
        "稿酬所得减除费用后按 70% 计入应纳税所得额代扣。",
        [
            ("user", "作者稿酬怎么代扣税"),
            ("assistant", "稿酬所得减除 20% 费用后再按 70% 计算，预扣率 20%，每月 15 日前申报。"),
        ],
    ),
    (
        "财务",
        "年度审计资料",
        "会计师事务所要的 23 项资料清单。",
        [
            ("user", "审计那边要的资料准备得怎么样"),
            ("assistant", "23 项里 17 项已提供，还差存货盘点表和长期挂账的往来款说明。"),
        ],
    ),
    (
        "财务",
        "费用报销线上化",
        None,
        [
            ("user", "报销还在贴纸质发票"),
            ("assistant", "全电发票可以直接导入报销单，审批走线上，纸质发票只在归档时补交。"),
        ],
    ),
    (
        "财务",
        "银行授信续期",
        "2000 万授信到期续期，准备近三年报表。",
        [
            ("user", "银行授信快到期了"),
            ("assistant", "需要近三年审计报告、近期财务报表和主要合同清单，客户经理说两周能批。"),
        ],
    ),
    # --- English: gameplay ---
    (
        "gameplay",
        "Stamina system rework",
        "Make stamina regen depend on armor weight instead of a flat rate.",
        [
            ("user", "Players say heavy armor has no downside."),
            (
                "assistant",
                "Regen scales from 100% (light) to 60% (heavy); dodge cost stays flat so heavy builds still feel responsive.",
            ),
        ],
    ),
    (
        "gameplay",
        "Enemy flanking AI",
        "Grunts should try to flank when the player hides behind cover.",
        [
            ("user", "Enemies just stand there when I'm behind cover."),
            (
                "assistant",
                "Added a flank goal: after 4s without line of sight, up to two grunts path to a side node while the rest suppress.",
            ),
        ],
    ),
    (
        "gameplay",
        "Fishing minigame prototype",
        None,
        [
            ("user", "Can we get a fishing prototype in for the next playtest?"),
            (
                "assistant",
                "Greybox is in: tension bar plus a timing ring, 6 fish types, no rewards hooked up yet.",
            ),
        ],
    ),
    (
        "gameplay",
        "Controller rebinding UI",
        "Full input rebinding for gamepad, required for accessibility.",
        [
            ("user", "Accessibility feedback asks for full gamepad rebinding."),
            (
                "assistant",
                "Every action is rebindable now except pause; conflicts show a swap prompt instead of silently unbinding.",
            ),
        ],
    ),
    (
        "gameplay",
        "Co-op revive rules",
        "Revive timing and penalties in two-player co-op.",
        [
            ("user", "Reviving in co-op feels too punishing."),
            (
                "assistant",
                "Cut revive time from 5s to 3s and the revived player keeps 40% health instead of 25%.",
            ),
        ],
    ),
    # --- English: build ---
    (
        "build",
        "Shader compile times",
        "Cut first-launch shader compilation on PC.",
        [
            ("user", "First launch sits on 'compiling shaders' for 6 minutes."),
            (
                "assistant",
                "Pre-warming the PSO cache from the QA playthrough covers 85% of pipelines; first launch drops to about 90s.",
            ),
        ],
    ),
    (
        "build",
        "Perforce stream cleanup",
        "Archive dead task streams and shrink the depot.",
        [
            ("user", "We have 140 task streams, most dead."),
            (
                "assistant",
                "112 had no submits in 90 days. Archiving them and obliterating their unshelved files frees about 900GB.",
            ),
        ],
    ),
    (
        "build",
        "Nightly build on Jenkins",
        None,
        [
            ("user", "Nightlies failed three nights in a row."),
            (
                "assistant",
                "The agent ran out of disk during cooking; added a workspace wipe step and moved DDC to the shared cache.",
            ),
        ],
    ),
    (
        "build",
        "Asset cooking on CI",
        "Move content cooking from artists' machines to CI agents.",
        [
            ("user", "Artists waste an hour a day cooking content."),
            (
                "assistant",
                "Two dedicated cook agents with a shared derived-data cache; artists pull cooked paks instead of cooking locally.",
            ),
        ],
    ),
    (
        "build",
        "Symbol server migration",
        "Move debug symbols to the new symbol server.",
        [
            ("user", "The old symbol share is almost full."),
            (
                "assistant",
                "Symbols for the last 30 builds are migrated; older ones stay read-only on the old share until September.",
            ),
        ],
    ),
    # --- English: liveops ---
    (
        "liveops",
        "Season 2 battle pass rewards",
        "Reward track for Season 2: 60 tiers, 8 premium cosmetics.",
        [
            ("user", "Draft the Season 2 reward track."),
            (
                "assistant",
                "60 tiers; premium cosmetics at every 10th tier, currency refunds at 25 and 50 so the pass pays for the next one.",
            ),
        ],
    ),
    (
        "liveops",
        "Discord moderation rota",
        None,
        [
            ("user", "The Discord gets toxic on weekends."),
            (
                "assistant",
                "Proposed a weekend rota across 4 community mods and an auto-mod rule for slurs and spam links.",
            ),
        ],
    ),
    (
        "liveops",
        "Weekend double-XP event",
        "Double-XP weekend to bring back lapsed players.",
        [
            ("user", "Let's run a double-XP weekend."),
            (
                "assistant",
                "Friday 10am to Monday 10am PT; announce on Wednesday with a push notification to players lapsed 14-60 days.",
            ),
        ],
    ),
    (
        "liveops",
        "Store bundle pricing",
        "Price the cosmetic bundles for the in-game store.",
        [
            ("user", "How should we price the cosmetic bundles?"),
            (
                "assistant",
                "Bundles at a 30% discount vs buying items separately; a $9.99 starter bundle as the anchor.",
            ),
        ],
    ),
    (
        "liveops",
        "Server population dashboard",
        "Live CCU by region for the ops team.",
        [
            ("user", "We need to see concurrent players by region."),
            (
                "assistant",
                "Dashboard shows CCU per region per minute with a 7-day overlay; alerts if a region drops 30% in 10 minutes.",
            ),
        ],
    ),
    # --- English: art ---
    (
        "art",
        "Character LOD pass",
        "Add LOD1-LOD3 for the 24 main characters.",
        [
            ("user", "Characters pop badly at distance."),
            (
                "assistant",
                "LOD1 at 50%, LOD2 at 25%, LOD3 at 10% triangle count; 24 characters, about 3 days of outsourcing.",
            ),
        ],
    ),
    (
        "art",
        "Lighting bake times",
        None,
        [
            ("user", "Lightmap bakes take all night."),
            (
                "assistant",
                "Lowering lightmap resolution on background props and baking per sublevel cuts it to about 2 hours.",
            ),
        ],
    ),
    (
        "art",
        "UI icon refresh",
        "Redraw 180 inventory icons in the new flat style.",
        [
            ("user", "Inventory icons look inconsistent."),
            (
                "assistant",
                "180 icons; a template with a fixed light direction and outline width, 40 done so far.",
            ),
        ],
    ),
    (
        "art",
        "Act 4 environment concepts",
        "Mood boards and concepts for the flooded city in Act 4.",
        [
            ("user", "Start the concepts for the flooded city."),
            (
                "assistant",
                "Three mood boards: drowned cathedral, rooftop markets, and a tidal tunnel network. Paintovers next week.",
            ),
        ],
    ),
    # --- English: personal ---
    (
        "personal",
        "Apartment lease renewal",
        "Lease ends in August; the owner proposed a 6% increase.",
        [
            ("user", "The lease renewal offer came in at +6%."),
            (
                "assistant",
                "Comparable units nearby went up 3-4%. A counter at 4% with a 2-year term is reasonable.",
            ),
        ],
    ),
    (
        "personal",
        "Marathon training plan",
        "18-week plan for the autumn marathon.",
        [
            ("user", "Make me an 18-week marathon plan."),
            (
                "assistant",
                "Peak week at 70km, long runs build from 16km to 32km, a cutback week every fourth week.",
            ),
        ],
    ),
    (
        "personal",
        "Car service booking",
        None,
        [
            ("user", "The car is due for its 60k service."),
            (
                "assistant",
                "The dealer has Thursday 8am with a courtesy car; the 60k service includes brake fluid and spark plugs.",
            ),
        ],
    ),
    (
        "personal",
        "Gift for mom's 60th",
        "Ideas for mom's 60th birthday.",
        [
            ("user", "Mom turns 60 next month, ideas?"),
            (
                "assistant",
                "A framed family photo book, a weekend at the spa she likes, or a pottery class together.",
            ),
        ],
    ),
    (
        "personal",
        "Spanish lessons",
        "Two online Spanish lessons a week, A2 level.",
        [
            ("user", "Find me a Spanish tutor, I'm around A2."),
            (
                "assistant",
                "Shortlisted three tutors with evening slots; two offer a free trial lesson this week.",
            ),
        ],
    ),
    (
        "personal",
        "2026 tax return",
        "Gather documents for the 2026 tax return.",
        [
            ("user", "What do I still need for the tax return?"),
            (
                "assistant",
                "Still missing the brokerage statement and the receipt for the charity donation.",
            ),
        ],
    ),
    (
        "personal",
        "Bike repair",
        None,
        [
            ("user", "My bike's gears skip under load."),
            (
                "assistant",
                "Probably a stretched chain; chains and cassettes are often replaced together. The shop quoted $85.",
            ),
        ],
    ),
    (
        "personal",
        "Weekend hiking trip",
        "Two-day hut hike, one night in a mountain hut.",
        [
            ("user", "Plan a two-day hike with a hut night."),
            (
                "assistant",
                "Day 1 is 14km with 900m of climbing to the hut, day 2 descends by the ridge trail; the hut needs booking.",
            ),
        ],
    ),
    (
        "personal",
        "Gym membership cancel",
        "Cancel the gym membership before the annual renewal.",
        [
            ("user", "Cancel my gym membership before it renews."),
            (
                "assistant",
                "It renews on the 1st; cancellation needs 30 days' written notice, so the email has to go out this week.",
            ),
        ],
    ),
    # --- English: lab / thesis / admin (PhD) ---
    (
        "lab",
        "Lab GPU reservation calendar",
        "Shared calendar for the 8 lab GPUs.",
        [
            ("user", "People keep grabbing all the lab GPUs."),
            (
                "assistant",
                "A shared calendar with 12-hour blocks, max 4 GPUs per person during deadline weeks.",
            ),
        ],
    ),
    (
        "lab",
        "Reproduce baseline from arXiv",
        "Reproduce the reported numbers of a 2026 baseline paper.",
        [
            ("user", "I can't match the numbers in that baseline paper."),
            (
                "assistant",
                "Their code uses a different test split than the paper says; with their split we're within 0.3 points.",
            ),
        ],
    ),
    (
        "lab",
        "Data loader speedup",
        None,
        [
            ("user", "GPU utilization is only 40%."),
            (
                "assistant",
                "The loader decodes images on the main process; 8 workers and pinned memory bring utilization to 90%.",
            ),
        ],
    ),
    (
        "lab",
        "Reading group schedule",
        "Weekly reading group, presenters for the semester.",
        [
            ("user", "Make the reading group schedule."),
            (
                "assistant",
                "14 sessions, each PhD student presents twice; a paper must be sent out 5 days before.",
            ),
        ],
    ),
    (
        "lab",
        "Workshop poster",
        "A0 poster for the workshop paper.",
        [
            ("user", "I need a poster for the workshop."),
            (
                "assistant",
                "A0 portrait, three columns: problem, method figure, results table; QR code to the paper.",
            ),
        ],
    ),
    (
        "lab",
        "Undergrad mentoring project",
        "Supervising a bachelor student's project on data augmentation.",
        [
            ("user", "My bachelor student is stuck."),
            (
                "assistant",
                "Narrow the scope to two augmentations and one dataset; a weekly 30-minute check-in.",
            ),
        ],
    ),
    (
        "lab",
        "Wandb project cleanup",
        None,
        [
            ("user", "Our wandb project has 3000 runs, impossible to navigate."),
            (
                "assistant",
                "Tag runs by paper and archive everything older than 6 months without a tag.",
            ),
        ],
    ),
    (
        "lab",
        "Cluster storage quota",
        "Home directory on the cluster is at 98% of quota.",
        [
            ("user", "I'm out of space on the cluster."),
            (
                "assistant",
                "Checkpoints are 1.6TB; keep the last 3 per run and move the rest to the archive tier.",
            ),
        ],
    ),
    (
        "thesis",
        "Thesis LaTeX template",
        "Adapt the university thesis template.",
        [
            ("user", "The university template breaks with biblatex."),
            (
                "assistant",
                "It loads natbib internally; a one-line patch disables that and biblatex works.",
            ),
        ],
    ),
    (
        "thesis",
        "Bibliography cleanup",
        None,
        [
            ("user", "My bib file has duplicates everywhere."),
            (
                "assistant",
                "Found 64 duplicate entries and 31 arXiv entries that have since been published; updated them.",
            ),
        ],
    ),
    (
        "thesis",
        "Thesis timeline with advisor",
        "Agreed timeline: full draft by March, defense in June.",
        [
            ("user", "Let's fix the timeline with my advisor."),
            (
                "assistant",
                "Full draft by March 1, committee copy by April 15, defense in the second half of June.",
            ),
        ],
    ),
    (
        "thesis",
        "Notation table",
        "A single notation table for the whole thesis.",
        [
            ("user", "Symbols clash between papers I'm merging."),
            (
                "assistant",
                "Built one notation table; 11 symbols were used with two meanings, proposed replacements for each.",
            ),
        ],
    ),
    (
        "admin",
        "Conference reimbursement",
        "Claim travel costs for the summer conference.",
        [
            ("user", "How do I get my conference trip reimbursed?"),
            (
                "assistant",
                "Submit within 6 months with the boarding passes, hotel invoice and registration receipt.",
            ),
        ],
    ),
    (
        "admin",
        "Teaching contract hours",
        None,
        [
            ("user", "Am I over my teaching hours this semester?"),
            (
                "assistant",
                "Your contract has 4h/week; with two tutorial groups and grading you're at about 5.5h.",
            ),
        ],
    ),
    (
        "admin",
        "Health insurance card",
        "Replace the lost health insurance card.",
        [
            ("user", "I lost my health insurance card."),
            (
                "assistant",
                "Request a replacement online; a temporary certificate can be downloaded right away.",
            ),
        ],
    ),
    (
        "admin",
        "Library book request",
        "Request two out-of-print books via the library.",
        [
            ("user", "The library doesn't have two books I need."),
            (
                "assistant",
                "Filed requests for both through the interlibrary service; delivery in about 2 weeks.",
            ),
        ],
    ),
    (
        "admin",
        "Office key deposit",
        "Get the office key deposit back before moving desks.",
        [
            ("user", "I'm moving offices, what about my key deposit?"),
            (
                "assistant",
                "Return the key to facilities with the deposit slip; the refund goes to your salary account.",
            ),
        ],
    ),
    # --- 供应链 (hardware startup) ---
    (
        "供应链",
        "海运订舱",
        "首批 2000 台整机海运到洛杉矶，7 月初开船。",
        [
            ("user", "首批货的海运订舱弄一下"),
            ("assistant", "40 尺高柜一个，7 月 3 日盐田开船，船期约 16 天，货代报价已对比三家。"),
        ],
    ),
    (
        "供应链",
        "安全库存设定",
        "关键物料安全库存按 4 周用量设定。",
        [
            ("user", "哪些物料要备安全库存"),
            (
                "assistant",
                "主控芯片、电芯、屏幕三类交期超过 8 周，安全库存按 4 周用量设，其余 2 周。",
            ),
        ],
    ),
    (
        "供应链",
        "VMI 库存协议",
        None,
        [
            ("user", "螺丝和包装辅料能不能让供应商放 VMI"),
            ("assistant", "两家辅料供应商同意 VMI，按月结算实际领用，协议模板已发法务。"),
        ],
    ),
    (
        "供应链",
        "供应商季度评分",
        "按质量、交付、价格、服务四项给 18 家供应商打分。",
        [
            ("user", "这个季度的供应商评分做一下"),
            ("assistant", "18 家里 3 家低于 70 分，主要是交付准时率不到 85%，需要约谈。"),
        ],
    ),
    (
        "供应链",
        "MRP 运算参数",
        "ERP 里 MRP 的提前期和批量参数校准。",
        [
            ("user", "MRP 跑出来的采购建议老是不准"),
            (
                "assistant",
                "有 40% 物料的采购提前期还是默认 7 天，按近半年实际到货时间批量更新后再跑。",
            ),
        ],
    ),
    (
        "供应链",
        "替代料认证",
        "主控周边被动件的第二来源认证。",
        [
            ("user", "电容电阻能不能找第二来源"),
            ("assistant", "挑了 23 个被动件做替代料认证，规格书比对完，样品下周到。"),
        ],
    ),
    (
        "供应链",
        "出货唛头规范",
        None,
        [
            ("user", "外箱唛头客户说不规范"),
            (
                "assistant",
                "统一成客户要求的格式：PO 号、箱号/总箱数、毛净重、原产地，模板已发仓库。",
            ),
        ],
    ),
    # --- 品质 ---
    (
        "品质",
        "老化测试方案",
        "整机 48 小时高温老化，抽样 5%。",
        [
            ("user", "老化测试怎么做"),
            ("assistant", "45℃ 环境满载运行 48 小时，每批抽 5%，记录重启和功耗异常。"),
        ],
    ),
    (
        "品质",
        "跌落测试",
        "1.2 米六面跌落，外壳不能开裂。",
        [
            ("user", "跌落测试结果怎么样"),
            ("assistant", "10 台里 1 台角跌后屏幕漏光，其他正常，建议内托加厚 2mm。"),
        ],
    ),
    (
        "品质",
        "8D 报告模板",
        None,
        [
            ("user", "供应商交的 8D 报告格式都不一样"),
            ("assistant", "出了一份统一模板，D4 根因必须附数据，D7 要写横向展开到哪些料号。"),
        ],
    ),
    (
        "品质",
        "客诉退货分析",
        "上月客诉退货 37 台的原因分布。",
        [
            ("user", "上个月退回来的机器什么问题"),
            ("assistant", "37 台里 19 台是无法开机，拆机发现电源按键 FPC 断裂，已经反馈给结构。"),
        ],
    ),
    (
        "品质",
        "ESD 防护检查",
        "产线静电防护点检。",
        [
            ("user", "产线的防静电做得怎么样"),
            ("assistant", "抽查 12 个工位，2 个手腕带接地电阻超标，离子风机有 1 台不工作。"),
        ],
    ),
    # --- 硬件 ---
    (
        "硬件",
        "天线调试",
        "2.4G 天线效率从 32% 调到 45% 以上。",
        [
            ("user", "2.4G 天线效率太低"),
            ("assistant", "匹配网络改成 π 型，净空区加大 1.5mm，实测效率到 47%。"),
        ],
    ),
    (
        "硬件",
        "电源纹波优化",
        "3.3V 轨纹波 120mV，目标 50mV 以内。",
        [
            ("user", "3.3V 纹波有点大"),
            ("assistant", "DC-DC 输出电容 ESR 偏大，换成两颗 22uF 陶瓷电容并联，纹波降到 38mV。"),
        ],
    ),
    (
        "硬件",
        "固件 OTA 升级",
        None,
        [
            ("user", "OTA 升级中途断电会不会变砖"),
            ("assistant", "用 A/B 双分区，升级完校验通过才切换，断电后仍从旧分区启动。"),
        ],
    ),
    (
        "硬件",
        "散热仿真",
        "满载时主控温度 92℃，目标 80℃ 以下。",
        [
            ("user", "主控太烫了"),
            ("assistant", "仿真显示加一块 0.5mm 铜箔导热到外壳，满载温度降到 78℃。"),
        ],
    ),
    (
        "硬件",
        "按键手感调整",
        "侧键行程和回弹力调整。",
        [
            ("user", "侧键按起来太软"),
            ("assistant", "把锅仔片从 160gf 换成 200gf，行程 0.25mm，样件下周做。"),
        ],
    ),
    (
        "硬件",
        "EVT 样机组装",
        "EVT 阶段组装 30 台样机。",
        [
            ("user", "EVT 样机什么时候能装"),
            ("assistant", "结构件齐了，30 台分两天装，第一天 10 台给软件，剩下 20 台做可靠性。"),
        ],
    ),
    (
        "硬件",
        "温湿度传感器选型",
        "对比三款温湿度传感器的精度和功耗。",
        [
            ("user", "温湿度传感器选哪个"),
            ("assistant", "三款里精度都在 ±2%RH，第二款休眠电流最低，只有 0.1uA，推荐它。"),
        ],
    ),
    # --- 家里 ---
    (
        "家里",
        "客厅窗帘更换",
        "客厅换遮光窗帘，窗宽 3.2 米。",
        [
            ("user", "客厅窗帘想换个遮光的"),
            (
                "assistant",
                "窗宽 3.2 米，布料按 2 倍褶算要 6.4 米，遮光率 90% 的款式三家报价 800 到 1500。",
            ),
        ],
    ),
    (
        "家里",
        "热水器维修",
        None,
        [
            ("user", "热水器洗着洗着就变凉"),
            ("assistant", "可能是水流传感器或者点火针的问题，售后约了周一上午上门，保修期内免费。"),
        ],
    ),
    (
        "家里",
        "周末大扫除分工",
        "周末全家大扫除，按房间分工。",
        [
            ("user", "周末大扫除怎么分工"),
            ("assistant", "爸爸负责厨房和阳台，妈妈负责卫生间，两个孩子各自收拾自己的房间和玩具。"),
        ],
    ),
    (
        "家里",
        "阿姨排班",
        "钟点工阿姨每周二、五上午来。",
        [
            ("user", "阿姨能不能多来一天"),
            ("assistant", "阿姨周四上午也有空，按小时 45 元，一周三次的话每月多 720 元。"),
        ],
    ),
    (
        "家里",
        "净水器滤芯",
        None,
        [
            ("user", "净水器提示换滤芯了"),
            (
                "assistant",
                "PP 棉半年一换，RO 膜两年一换，这次只需要换 PP 棉和活性炭，官方套装 299 元。",
            ),
        ],
    ),
    (
        "家里",
        "家庭药箱整理",
        "整理家里药箱，清掉过期药。",
        [
            ("user", "药箱里好多药不知道过没过期"),
            ("assistant", "清出 11 盒过期药，补了退烧药、创可贴和碘伏，儿童药单独放一格。"),
        ],
    ),
    (
        "家里",
        "扫地机器人选购",
        "对比三款带拖地的扫地机器人。",
        [
            ("user", "扫地机器人买哪个"),
            ("assistant", "家里有地毯的话选能自动抬拖布的，三款里第二款基站能自动洗拖布和烘干。"),
        ],
    ),
    # --- 学校 ---
    (
        "学校",
        "英语阅读打卡",
        "每天 15 分钟英语阅读，在班级小程序打卡。",
        [
            ("user", "英语阅读打卡老是忘"),
            ("assistant", "设了每天晚上 8 点的提醒，打卡截图自动存到相册的单独文件夹。"),
        ],
    ),
    (
        "学校",
        "午托班缴费",
        None,
        [
            ("user", "午托费这学期交多少"),
            ("assistant", "每月 680 元，按学期一次交 3400 元，在学校缴费平台上交。"),
        ],
    ),
    (
        "学校",
        "图书角捐书",
        "班级图书角每人捐两本书。",
        [
            ("user", "班级图书角要捐书"),
            ("assistant", "每人两本，建议捐《昆虫记》和《小英雄雨来》，书上写好名字和班级。"),
        ],
    ),
    (
        "学校",
        "视力筛查结果",
        "学校视力筛查：左眼 4.9，右眼 5.0。",
        [
            ("user", "学校视力筛查单发回来了"),
            ("assistant", "左眼 4.9、右眼 5.0，建议去医院做一次散瞳验光确认。"),
        ],
    ),
    (
        "学校",
        "课后服务选课",
        "学校课后服务选课：周二书法、周四篮球。",
        [
            ("user", "学校课后服务选什么"),
            ("assistant", "周二选书法、周四选篮球，名额有限，周一早上 8 点开放。"),
        ],
    ),
    (
        "学校",
        "数学口算练习",
        "每天 5 分钟口算，100 以内加减。",
        [
            ("user", "口算速度太慢了"),
            ("assistant", "每天 5 分钟，一页 50 题，计时记录，两周后看速度变化。"),
        ],
    ),
]


# --------------------------------------------------------------------------------------
# Log generators (seeded)
# --------------------------------------------------------------------------------------


def hl7_log(
    rng: random.Random, channel: str, prefix: str, start: int, buried: str, at_line: int, n: int
) -> list[str]:
    """An interface-engine log: HL7 ORU messages routed and ACKed, one rejected line buried."""
    lines = []
    sec = 8 * 3600 + 2 * 60
    for i in range(n):
        sec += rng.randint(2, 9)
        ts = f"{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}"
        ctl = f"{prefix}{start + i}"
        if i == at_line:
            lines.append(f"{ts} [{channel}] ERROR {buried}")
            continue
        kind = rng.random()
        if kind < 0.72:
            lines.append(
                f"{ts} [{channel}] INFO  ORU^R01 MSH-10={ctl} routed to HIS, ACK AA ({rng.randint(8, 60)}ms)"
            )
        elif kind < 0.9:
            lines.append(f"{ts} [{channel}] INFO  queue depth={rng.randint(0, 12)}, status=STARTED")
        else:
            lines.append(
                f"{ts} [{channel}] WARN  ORU^R01 MSH-10={ctl} slow ACK ({rng.randint(900, 2400)}ms), resent once, ACK AA"
            )
    return lines


def preflight_log(rng: random.Random, pdf: str, buried: str, at_page: int, pages: int) -> list[str]:
    """A page-by-page PDF preflight report; one page has the real problem."""
    lines = []
    for p in range(1, pages + 1):
        if p == at_page:
            lines.append(f"[preflight] {pdf} p.{p:03d} ERROR {buried}")
            continue
        kind = rng.random()
        if kind < 0.75:
            lines.append(
                f"[preflight] {pdf} p.{p:03d} OK    fonts embedded, images >= 300dpi, bleed 3mm"
            )
        elif kind < 0.92:
            lines.append(
                f"[preflight] {pdf} p.{p:03d} WARN  文字距离裁切线 {rng.uniform(3.1, 4.9):.1f}mm（建议 >= 5mm）"
            )
        else:
            spot = rng.choice(["7621 C", "433 C", "7527 C"])
            lines.append(f"[preflight] {pdf} p.{p:03d} OK    专色 PANTONE {spot} 已转 CMYK")
    return lines


def steamcmd_log(rng: random.Random, buried: str, at_line: int, n: int) -> list[str]:
    """A steamcmd upload log: chunks uploaded to two depots, the failing commit buried."""
    lines = []
    sec = 14 * 3600 + 5 * 60
    pct = 0.0
    for i in range(n):
        sec += rng.randint(1, 4)
        ts = f"[2027-05-20 {sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}]"
        if i == at_line:
            lines.append(f"{ts} {buried}")
            continue
        depot = rng.choice([2271841, 2271842])
        kind = rng.random()
        if kind < 0.7:
            pct = min(99.9, pct + rng.uniform(0.3, 1.1))
            lines.append(
                f"{ts} Uploading depot {depot}: chunk {rng.randrange(16**8):08x} ({rng.randint(256, 1024)} KB) ... {pct:.1f}%"
            )
        elif kind < 0.9:
            lines.append(f"{ts} Depot {depot}: skipped unchanged chunk {rng.randrange(16**8):08x}")
        else:
            lines.append(
                f"{ts} Connection to CM 162.254.{rng.randint(192, 199)}.{rng.randint(1, 250)}:27017 keepalive ok"
            )
    return lines


def crashdump_log(rng: random.Random, buried: str, at_line: int, n: int) -> list[str]:
    """A symbolicated thread list from a console crash dump; the crashing thread is buried."""
    names = ["RenderThread", "AudioMixer", "StreamingIO", "NetPoll", "TaskGraphWorker"]
    frames = [
        "KERNELBASE!WaitForSingleObjectEx+0x9e",
        "ntdll!NtWaitForAlertByThreadId+0x14",
        "Kestrel!TaskGraph::WaitForTask+0x1a2",
        "XAudio2!MixerThread::Run+0x88",
        "Kestrel!IoDispatcher::Poll+0x51",
    ]
    lines = []
    for i in range(n):
        if i == at_line:
            lines.append(buried)
            continue
        name = rng.choice(names)
        if name == "TaskGraphWorker":
            name = f"{name}{rng.randint(0, 11)}"
        lines.append(
            f"Thread 0x{rng.randint(0x2000, 0x7FFF):04X} [{name}] state=Waiting  top: {rng.choice(frames)}"
        )
    return lines


def iqc_log(rng: random.Random, buried: str, at_line: int, n: int) -> list[str]:
    """Incoming-inspection records, one lot per line; a single NG lot is buried."""
    parts = ["外壳-上盖", "外壳-下盖", "按键帽", "导光柱", "电池仓盖", "螺丝 M2x4"]
    lines = []
    for i in range(n):
        day = 1 + i // 12
        lot = f"2406{day:02d}-{i % 12 + 1:02d}"
        if i == at_line:
            lines.append(buried)
            continue
        if rng.random() < 0.85:
            qty = rng.choice([80, 125, 200, 315])
            lines.append(
                f"[IQC] 06-{day:02d} LOT {lot} {rng.choice(parts)} AQL 1.0 抽检 {qty} 件 PASS（外观 0 / 尺寸 0 / 功能 0）"
            )
        else:
            lines.append(
                f"[IQC] 06-{day:02d} 温湿度记录 {rng.uniform(22.0, 25.0):.1f}℃ / {rng.randint(45, 60)}%RH 正常"
            )
    return lines


def rsync_log(rng: random.Random, buried: str, at_line: int, n: int) -> list[str]:
    """An rsync run backing up photos to the NAS; one permission error buried."""
    folders = ["0802_外婆家", "0815_海边", "0823_动物园", "0901_开学"]
    lines = []
    total = n + 40
    for i in range(n):
        if i == at_line:
            lines.append(buried)
            continue
        size = rng.randint(1_200_000, 4_800_000)
        lines.append(
            f"photos/2027/{rng.choice(folders)}/IMG_{5000 + i}.HEIC  {size:,} 100%  {rng.uniform(8, 40):.2f}MB/s  "
            f"0:00:0{rng.randint(0, 3)} (xfr#{i + 1}, to-chk={total - i}/{total})"
        )
    return lines


def train_log(rng: random.Random, runs: list[str], buried: str, at_line: int, n: int) -> list[str]:
    """Interleaved training logs of several sweep runs; one failing run buried."""
    steps = dict.fromkeys(runs, 36000)
    lines = []
    for i in range(n):
        if i == at_line:
            lines.append(buried)
            continue
        run = rng.choice(runs)
        steps[run] += 200
        if rng.random() < 0.85:
            lines.append(
                f"[{run}] step {steps[run]:>6d} | loss {rng.uniform(1.9, 2.6):.4f} | grad_norm {rng.uniform(0.4, 1.9):.2f} | "
                f"{rng.randint(41000, 47000)} tok/s"
            )
        else:
            lines.append(f"[{run}] eval @ step {steps[run]}: knn_acc {rng.uniform(0.61, 0.68):.3f}")
    return lines


# --------------------------------------------------------------------------------------
# Snapshot 1: hospital IT engineer (Chinese with system names), Tuesday afternoon.
# Two near-identical 医保结算接口报错 tasks (门诊 / 住院), two HL7 回传中断 tasks whose only
# difference is buried in long interface-engine logs, a PACS task whose summary is stale,
# a task named 新员工…, and 堡垒机 mentioned in two tasks.
# --------------------------------------------------------------------------------------


def snapshot_hospital(rng: random.Random):
    sid = "hospital-it-2027-03-09"
    now = datetime.fromisoformat("2027-03-09T15:20:00+08:00")
    specs = [
        Spec(
            "yb_out",
            "门诊医保结算接口报错",
            "信息科",
            ago(h=1, m=35),
            state="waiting_for_user",
            summary="门诊医保结算上传失败，返回 E1032：费用明细里 6 个药品的国家编码和 HIS 对照表不一致。",
            messages=[
                ("user", "收费处说门诊医保结算一直失败，窗口排了好长的队"),
                (
                    "tool",
                    "2027-03-09 09:41:07 [yb-gateway] POST /settle/outpatient -> E1032 编码不匹配 item=XA02BCA118B001010104456 hisCode=YP00871\n"
                    "2027-03-09 09:41:52 [yb-gateway] POST /settle/outpatient -> E1032 编码不匹配 item=XN06DXG044A001010201903 hisCode=YP01240",
                ),
                (
                    "assistant",
                    "是 E1032：上周药品编码库更新后，有 6 个药的国家编码变了，HIS 里的对照表没同步。把对照表这 6 条改掉就能结算。",
                ),
                ("user", "先改，改完我让收费处试一笔"),
                ("assistant", "对照表已经改好，等收费处试结算的结果。"),
            ],
        ),
        Spec(
            "yb_in",
            "住院医保结算接口报错",
            "信息科",
            ago(d=1, h=4),
            summary="住院患者出院时医保结算接口报错，部分患者办不了出院。",
            messages=[
                ("user", "住院处也说医保结算报错，病人出不了院"),
                (
                    "tool",
                    "[yb-gateway] POST /settle/inpatient -> E2207 结算单据已存在（重复结算） mdtrtId=H2027030800412\n"
                    "[yb-gateway] POST /settle/inpatient -> E2207 结算单据已存在（重复结算） mdtrtId=H2027030800436",
                ),
                (
                    "assistant",
                    "报的是 E2207 重复结算：第一次结算超时后收费员又点了一次，其实医保端第一次已经成功了。要先调撤销结算再重新结算。",
                ),
            ],
        ),
        Spec(
            "yb_catalog",
            "医保目录下载超时",
            "信息科",
            ago(d=2, h=1),
            summary="每天凌晨的医保目录增量下载超时，增量包 20270306 下到一半断开。",
            messages=[
                ("user", "医保目录下载又超时了"),
                (
                    "assistant",
                    "增量包有 180MB，前置机到专网的带宽只有 4Mbps。建议改成分页下载，每页 5000 条，支持断点续传。",
                ),
            ],
        ),
        Spec(
            "pacs",
            "PACS 影像调阅慢",
            "信息科",
            ago(h=3, m=10),
            summary="放射科反映 PACS 调阅 CT 影像要 40 秒，定位到存储阵列 IO 饱和，已把近 3 个月影像迁到 SSD 层。",
            messages=[
                ("user", "放射科说 PACS 调一个 CT 要 40 秒"),
                (
                    "assistant",
                    "存储阵列 IO 等待 90% 以上。近 3 个月的影像访问最频繁，迁到 SSD 层以后调阅降到 6 秒左右。",
                ),
                (
                    "user",
                    "放射科那边好了。另外超声科三号机今天早上收不到 worklist，病人信息只能手输",
                    172800,
                ),
                (
                    "tool",
                    "C-FIND SCU US_ROOM3 -> MWL_SCP: Association Rejected (Result: 1, Source: 1, Reason: 3 - Calling AE Title Not Recognized)",
                ),
                (
                    "assistant",
                    "服务端不认识 US_ROOM3 这个 AE Title，应该是换设备时改了 AE Title 没在服务端登记。我把 US_ROOM3 加进白名单了，让超声科重试一下。",
                ),
            ],
        ),
        Spec(
            "lis",
            "检验结果回传中断",
            "信息科",
            ago(m=50),
            state="running",
            summary="LIS 到 HIS 的检验结果 HL7 接口今天上午间歇性中断，正在看接口引擎日志。",
            messages=[
                ("user", "临床说有些检验结果回不来，接口引擎的日志贴给你"),
                *chunk(
                    hl7_log(
                        rng,
                        "LIS_TO_HIS",
                        "LAB20270309-",
                        60100,
                        "ORU^R01 MSH-10=LAB20270309-88412 rejected by HIS: ACK AE, OBX-5 值超长 (len=312 > 200), 项目=尿沉渣镜检",
                        117,
                        150,
                    ),
                    10,
                    2,
                ),
                ("assistant", "绝大部分消息都是 ACK AA，我还在往后翻被拒的那条。", 60),
            ],
        ),
        Spec(
            "pis",
            "病理报告回传中断",
            "信息科",
            ago(d=1, h=1),
            state="waiting_for_user",
            summary="病理系统 PIS 回传 HIS 的报告消息个别被拒，正在看接口引擎日志。",
            messages=[
                ("user", "病理科说有几份报告 HIS 里看不到，日志在这"),
                *chunk(
                    hl7_log(
                        rng,
                        "PIS_TO_HIS",
                        "PAT0307-",
                        1100,
                        "ORU^R01 MSH-10=PAT0307-0093 rejected by HIS: ACK AE, PID-3 患者 ID 0021877 在 HIS 中不存在",
                        64,
                        120,
                    ),
                    10,
                    2,
                ),
                ("assistant", "日志很长，前面都是正常回传的，我先存下来慢慢看。", 60),
            ],
        ),
        Spec(
            "dengbao",
            "等保三级测评整改",
            "信息科",
            ago(d=3, h=2),
            summary="等保测评提出 12 项高风险问题：弱口令、日志留存不足 180 天、运维没走堡垒机，逐项整改。",
            messages=[
                ("user", "等保测评的结果出来了，高风险 12 项"),
                (
                    "assistant",
                    "按三类排：账号口令 5 项、日志审计 4 项、运维通道 3 项。运维通道要采购堡垒机，采购需求我写好了。",
                ),
            ],
        ),
        Spec(
            "vpn",
            "远程运维 VPN 账号清理",
            "信息科",
            ago(h=6),
            summary="清理厂商远程运维的 VPN 账号，停用 3 个月没登录的。",
            messages=[
                ("user", "厂商的 VPN 账号太多了，清一下"),
                (
                    "assistant",
                    "共 64 个厂商账号，27 个超过 3 个月没登录，已停用。以后厂商运维统一从堡垒机进，VPN 只留给本院工程师。",
                ),
            ],
        ),
        Spec(
            "newstaff",
            "新员工 HIS 账号开通",
            "信息科",
            ago(h=4, m=20),
            summary="3 月入职 23 人（含规培生 15 名）的 HIS、EMR 账号和权限开通。",
            messages=[
                ("user", "这批新员工的账号什么时候能开好"),
                (
                    "assistant",
                    "23 人里 8 名正式员工已经开通；15 名规培生要等医务处的轮转表，按轮转科室分配处方权限。",
                ),
            ],
        ),
        Spec(
            "callscreen",
            "门诊叫号屏黑屏",
            "信息科",
            ago(d=1, h=6),
            summary="门诊二楼 4 块叫号屏每天下午黑屏，怀疑播放盒过热。",
            messages=[
                ("user", "门诊二楼的叫号屏下午又黑了"),
                (
                    "assistant",
                    "4 块屏都是下午 2 点以后黑，播放盒装在吊顶里，温度到了 71℃。先加个散热风扇试试。",
                ),
            ],
        ),
        Spec(
            "switch",
            "门诊楼核心交换机更换",
            "信息科",
            ago(d=4),
            summary="门诊楼核心交换机用了 9 年，换新机型，停机窗口定在周日凌晨。",
            messages=[
                ("user", "换交换机要停多久"),
                (
                    "assistant",
                    "切换大约 40 分钟。门诊楼的叫号屏、自助机、护士站电脑都挂在这台下面，周日凌晨 2 点到 3 点切影响最小。",
                ),
            ],
        ),
        Spec(
            "infect",
            "传染病报告卡漏报统计",
            "医务处",
            ago(d=2, h=5),
            summary="一季度传染病报告卡漏报 7 例，集中在急诊和儿科。",
            messages=[
                ("user", "传染病报告卡漏报的情况统计一下"),
                (
                    "assistant",
                    "一季度漏报 7 例，急诊 4 例、儿科 3 例，都是门诊诊断后没有触发报卡提醒。",
                ),
            ],
        ),
        Spec(
            "ups",
            "机房 UPS 电池更换",
            "信息科",
            ago(d=5),
            archived=True,
            summary="机房 UPS 电池组使用 5 年，整组更换 32 节。",
            messages=[
                ("user", "UPS 电池放电测试只撑了 8 分钟"),
                ("assistant", "电池组用了 5 年，建议整组更换 32 节，停电切旁路操作放在周六晚上。"),
            ],
        ),
        Spec(
            "teambuild",
            "闲聊：科室团建去哪",
            "信息科",
            ago(h=2),
            labels=[SIDE_LABEL],
            messages=[
                ("user", "科室团建去哪好，12 个人"),
                ("assistant", "周边一日游可以去湿地公园骑行，晚上农家乐，人均 200 以内。"),
            ],
        ),
        Spec(
            "coord",
            "协调：全院终端资产盘点",
            "信息科",
            ago(h=5),
            role="coordination",
            messages=[("assistant", "已派发子任务：梳理全院打印机型号和耗材。")],
        ),
        Spec(
            "printers",
            "梳理全院打印机型号",
            "信息科",
            ago(h=4, m=30),
            parent="coord",
            state="running",
            summary="全院 612 台打印机，型号 37 种，耗材通用性差。",
            messages=[("assistant", "已统计 612 台打印机，37 种型号，其中 9 种已经停产。")],
        ),
    ]
    cases = [
        Case(
            "门诊医保结算那个报错修好了没",
            "existing",
            ["similar_names", "filler_words"],
            "unique",
            target="yb_out",
            keys=("门诊医保结算",),
            layer="name",
        ),
        Case(
            "住院结算报 E2207 是啥意思",
            "existing",
            ["similar_names", "identifiers"],
            "unique",
            target="yb_in",
            keys=("E2207",),
            layer="evidence",
        ),
        Case(
            "医保结算接口又报错了",
            "clarify",
            ["similar_names"],
            "ambiguous",
            keys=("医保结算接口",),
        ),
        Case(
            "is the E1032 mapping fix confirmed by 收费处?",
            "existing",
            ["identifiers", "mixed_zh_en"],
            "unique",
            target="yb_out",
            keys=("E1032",),
            layer="summary",
        ),
        Case(
            "医保目录 download 老超时那个再看下",
            "existing",
            ["mixed_zh_en", "filler_words", "partial_name"],
            "unique",
            target="yb_catalog",
            keys=("医保目录",),
            layer="name",
        ),
        Case(
            "US_ROOM3 还是拉不到 worklist，接着查吧",
            "existing",
            ["stale_summary", "identifiers", "mixed_zh_en"],
            "unique",
            target="pacs",
            keys=("US_ROOM3",),
            layer="evidence",
        ),
        Case(
            "超声科那台收不到 worklist 的事怎么样了",
            "existing",
            ["stale_summary", "mixed_zh_en"],
            "unique",
            target="pacs",
            keys=("worklist",),
            layer="evidence",
        ),
        Case(
            "LAB20270309-88412 那条为什么被拒",
            "existing",
            ["repetitive_logs", "identifiers"],
            "unique",
            target="lis",
            keys=("LAB20270309-88412",),
            layer="evidence",
        ),
        Case(
            "病理那边 PAT0307-0093 患者 ID 对不上那个，HIS 里查到了吗",
            "existing",
            ["repetitive_logs", "identifiers", "similar_names"],
            "unique",
            target="pis",
            keys=("PAT0307-0093",),
            layer="evidence",
        ),
        Case(
            "回传中断",
            "clarify",
            ["short_ambiguous", "similar_names"],
            "ambiguous",
            keys=("回传中断",),
        ),
        Case(
            "等保整改里堡垒机那项采购下来了吗",
            "existing",
            ["distractor_evidence"],
            "unique",
            target="dengbao",
            keys=("等保", "堡垒机"),
            layer="summary",
        ),
        Case(
            "堡垒机",
            "clarify",
            ["short_ambiguous", "distractor_evidence"],
            "ambiguous",
            keys=("堡垒机",),
        ),
        Case(
            "新员工账号那个，规培生的权限开了没",
            "existing",
            ["name_contains_new", "filler_words"],
            "unique",
            target="newstaff",
            keys=("新员工",),
            layer="name",
        ),
        Case(
            "另起一个任务：给新员工做 HIS 操作培训",
            "new",
            ["explicit_new", "name_contains_new"],
            "new_overlap",
            keys=("新员工",),
        ),
        Case(
            "叫号屏",
            "existing",
            ["short_unique", "name_over_logs"],
            "unique",
            target="callscreen",
            keys=("叫号屏黑屏",),
            layer="name",
        ),
        Case(
            "门诊楼交换机周日几点切",
            "existing",
            ["partial_name"],
            "unique",
            target="switch",
            keys=("交换机",),
            layer="name",
        ),
        Case(
            "机房 UPS 电池那个接着弄",
            "clarify",
            ["ineligible"],
            "ineligible",
            keys=("UPS",),
        ),
        Case(
            "全院打印机型号梳理完了吗",
            "clarify",
            ["ineligible"],
            "ineligible",
            keys=("打印机型号",),
        ),
        Case(
            "帮我写一份年度述职报告",
            "clarify",
            ["no_match", "shared_word"],
            "none",
            keys=("述职",),
        ),
    ]
    fill = dict(
        n_today=4,
        n_week=8,
        n_old=10,
        today_min=ago(h=1),
        old_range=(ago(d=9), ago(d=70)),
        workspaces={"信息科", "医务处", "个人"},
    )
    return sid, now, specs, cases, fill


# --------------------------------------------------------------------------------------
# Snapshot 2: editor at a small publishing house (Chinese), Wednesday morning.
# 二校 / 三校 of two books, two 印前预检 tasks with long page-by-page reports, a task named
# 新书发布会…, a foreign rights task named in English, and two monthly reports with the same
# name five weeks apart.
# --------------------------------------------------------------------------------------


def snapshot_press(rng: random.Random):
    sid = "press-editor-2027-04-14"
    now = datetime.fromisoformat("2027-04-14T10:05:00+08:00")
    specs = [
        Spec(
            "shz2",
            "《山海札记》二校",
            "编辑部",
            ago(d=4, h=3),
            summary="二校改动 312 处，主要是异体字和标点，已经退回排版。",
            messages=[
                ("user", "山海札记二校的改动多不多"),
                (
                    "assistant",
                    "共 312 处：异体字 140 处、标点 96 处，其余是作者补改。改样已经发给排版了。",
                ),
            ],
        ),
        Spec(
            "shz3",
            "《山海札记》三校",
            "编辑部",
            ago(h=1, m=10),
            state="waiting_for_user",
            summary="三校进行中，作者要求删掉第七章结尾两段，页码会变。",
            messages=[
                ("user", "作者来电话，第七章最后两段要删"),
                ("assistant", "删掉后第七章少 1 页，后面的目录和页码都要顺改，索引页也得重出。"),
                ("user", "先删，页码的事我跟排版说"),
            ],
        ),
        Spec(
            "hl3",
            "《河流笔记》三校",
            "编辑部",
            ago(d=1, h=5),
            summary="三校发现插图编号和正文引用对不上 14 处。",
            messages=[
                ("user", "河流笔记三校有什么问题"),
                (
                    "assistant",
                    "插图编号和正文引用有 14 处对不上，都是第 4 章调整顺序以后没有顺改。",
                ),
            ],
        ),
        Spec(
            "hl_cover",
            "《河流笔记》封面设计",
            "编辑部",
            ago(d=2, h=2),
            summary="封面第二稿：作者想要更素一点，去掉烫金。",
            messages=[
                ("user", "河流笔记的封面作者有意见"),
                (
                    "assistant",
                    "作者觉得烫金太俗，第二稿改成单色印刷加压凹，书名字体换成细一点的宋体。",
                ),
            ],
        ),
        Spec(
            "pf_shz",
            "印前预检：《山海札记》",
            "编辑部",
            ago(h=5),
            state="blocked",
            summary="印厂把《山海札记》的 PDF 退回来了，正在逐页看预检报告。",
            messages=[
                ("user", "印厂把山海札记的 PDF 退回来了，预检报告贴给你"),
                *chunk(
                    preflight_log(
                        rng,
                        "shanhai_v3.pdf",
                        "字体 FZShuSong-Z01 未嵌入（Type 3 子集缺失）",
                        217,
                        288,
                    ),
                    12,
                    2,
                ),
                ("assistant", "大部分页面都通过了，我还在找印厂说的那一页。", 60),
            ],
        ),
        Spec(
            "pf_hl",
            "印前预检：《河流笔记》",
            "编辑部",
            ago(d=1, h=1),
            state="waiting_for_user",
            summary="《河流笔记》PDF 印前预检，印厂说有图片不合格。",
            messages=[
                ("user", "河流笔记的预检报告也回来了"),
                *chunk(
                    preflight_log(
                        rng,
                        "heliu_v2.pdf",
                        "图片 fig_4-07.tif 有效分辨率 150dpi（要求 >= 300dpi）",
                        88,
                        240,
                    ),
                    12,
                    2,
                ),
                ("assistant", "报告很长，我先存下来，等你看要不要一起处理。", 60),
            ],
        ),
        Spec(
            "isbn",
            "《夜航手册》书号和 CIP",
            "编辑部",
            ago(d=3),
            summary="《夜航手册》书号已经下来，CIP 数据在等核字号。",
            messages=[
                ("user", "夜航手册的书号下来没"),
                (
                    "assistant",
                    "书号 ISBN 978-7-5321-8846-0 已分配，条码文件生成好了；CIP 数据报上去了，核字号预计本周五下来。",
                ),
            ],
        ),
        Spec(
            "launch",
            "新书发布会：《夜航手册》",
            "发行",
            ago(h=3, m=40),
            summary="4 月 23 日读书日在独立书店办新书发布会，请作者和两位评论家。",
            messages=[
                ("user", "读书日那场新书发布会，嘉宾请了谁"),
                (
                    "assistant",
                    "作者确认到场，两位评论家一位确认、一位待回复；书店能坐 80 人，需要提前开放报名。",
                ),
                ("user", "报名链接做一个"),
            ],
        ),
        Spec(
            "printq",
            "印厂报价比价",
            "发行",
            ago(h=20),
            summary="三家印厂报价对比：70g 轻型纸、锁线胶装，首印 5000 册单价 6.8–7.4 元。",
            messages=[
                ("user", "三家印厂的报价对比一下"),
                (
                    "assistant",
                    "首印 5000 册：A 厂 6.8 元、B 厂 7.1 元、C 厂 7.4 元，A 厂交期最长，要 25 天。",
                ),
                ("user", "A 厂刚来消息，说 5 月纸价要涨 8%，让我们 4 月 20 号前锁价", 259200),
                (
                    "assistant",
                    "按 5000 册算，锁价能省 2,700 元左右。建议先锁《夜航手册》这一本，另外两本等定稿再说。",
                ),
            ],
        ),
        Spec(
            "tidewater",
            "版权引进：Tidewater Press 合同",
            "版权",
            ago(d=1, h=2),
            summary="引进 Tidewater Press 的 The Salt Road 中文简体版权，合同在谈电子书分成。",
            messages=[
                ("user", "Tidewater 的合同回来了，电子书分成他们要 25%"),
                ("assistant", "行业里一般 20%-25%，25% 可以接受，但要求有声书权利一起授权。"),
            ],
        ),
        Spec(
            "foreign_pick",
            "外版书选题会",
            "编辑部",
            ago(d=5),
            summary="季度外版书选题会：从 6 家外方出版社书目里挑 10 本。",
            messages=[
                ("user", "外版书目整理一下"),
                (
                    "assistant",
                    "整理了 6 家外方书目，Tidewater Press 的自然文学系列最契合我们的定位，推荐其中 3 本。",
                ),
            ],
        ),
        Spec(
            "report_feb",
            "发行月报",
            "发行",
            ago(d=38),
            summary="2 月发行月报：发货 3.2 万册，电商渠道占 63%。",
            messages=[
                ("user", "2 月的发行月报做一下"),
                ("assistant", "2 月发货 3.2 万册，退货率 9%，电商渠道占 63%。"),
            ],
        ),
        Spec(
            "report_mar",
            "发行月报",
            "发行",
            ago(d=6),
            summary="3 月发行月报：退货率升到 14%，主要是两本社科书。",
            messages=[
                ("user", "3 月的发行月报"),
                ("assistant", "3 月发货 2.8 万册，退货率 14%，两本社科书退得最多。"),
            ],
        ),
        Spec(
            "shz1",
            "《山海札记》一校",
            "编辑部",
            ago(d=12),
            archived=True,
            summary="一校改动 580 处，作者补写了两节。",
            messages=[
                ("user", "一校样作者改了好多"),
                ("assistant", "共 580 处，作者在第三章补写了两节，约 6000 字。"),
            ],
        ),
        Spec(
            "coffee",
            "闲聊：楼下新开的咖啡馆",
            "编辑部",
            ago(h=2),
            labels=[SIDE_LABEL],
            messages=[
                ("user", "楼下新开了家咖啡馆，好喝吗"),
                ("assistant", "评价说手冲不错，工作日上午有 8 折。"),
            ],
        ),
        Spec(
            "coord",
            "协调：《山海札记》出版进度",
            "编辑部",
            ago(h=6),
            role="coordination",
            messages=[("assistant", "已派发子任务：核对书中引文出处。")],
        ),
        Spec(
            "quotes",
            "核对《山海札记》引文出处",
            "编辑部",
            ago(h=5, m=30),
            parent="coord",
            state="running",
            summary="核对书中 86 处古籍引文的版本和页码。",
            messages=[("assistant", "86 处引文已核 51 处，有 4 处页码和通行本对不上。")],
        ),
    ]
    cases = [
        Case(
            "山海札记三校，第七章那两段删了没",
            "existing",
            ["similar_names", "filler_words"],
            "unique",
            target="shz3",
            keys=("山海札记", "三校"),
            layer="name",
        ),
        Case("三校", "clarify", ["short_ambiguous", "similar_names"], "ambiguous", keys=("三校",)),
        Case(
            "河流笔记插图编号对不上那个改完了吗",
            "existing",
            ["similar_names", "filler_words"],
            "unique",
            target="hl3",
            keys=("河流笔记", "插图编号"),
            layer="summary",
        ),
        Case(
            "河流笔记封面第二稿出来没",
            "existing",
            ["similar_names"],
            "unique",
            target="hl_cover",
            keys=("河流笔记", "封面"),
            layer="name",
        ),
        Case(
            "FZShuSong-Z01 没嵌入那页怎么处理",
            "existing",
            ["repetitive_logs", "identifiers", "mixed_zh_en"],
            "unique",
            target="pf_shz",
            keys=("FZShuSong-Z01",),
            layer="evidence",
        ),
        Case(
            "fig_4-07 分辨率不够那张让作者重新给吧",
            "existing",
            ["repetitive_logs", "identifiers", "similar_names"],
            "unique",
            target="pf_hl",
            keys=("fig_4-07",),
            layer="evidence",
        ),
        Case(
            "印前预检",
            "clarify",
            ["short_ambiguous", "similar_names"],
            "ambiguous",
            keys=("印前预检",),
        ),
        Case(
            "978-7-5321-8846-0 的条码发给印厂了吗",
            "existing",
            ["identifiers"],
            "unique",
            target="isbn",
            keys=("978-7-5321-8846-0",),
            layer="evidence",
        ),
        Case(
            "新书发布会那个，报名链接做好了没",
            "existing",
            ["name_contains_new", "filler_words"],
            "unique",
            target="launch",
            keys=("新书发布会",),
            layer="name",
        ),
        Case(
            "纸价要涨的话要不要先锁价",
            "existing",
            ["stale_summary"],
            "unique",
            target="printq",
            keys=("锁价",),
            layer="evidence",
        ),
        Case(
            "Tidewater 合同里电子书分成再核一下",
            "existing",
            ["mixed_zh_en", "name_over_logs"],
            "unique",
            target="tidewater",
            keys=("Tidewater", "合同"),
            layer="name",
        ),
        Case(
            "The Salt Road contract - did they agree to include audio rights?",
            "existing",
            ["mixed_zh_en"],
            "unique",
            target="tidewater",
            keys=("Salt Road",),
            layer="summary",
        ),
        Case(
            "发行月报",
            "clarify",
            ["recency", "short_ambiguous"],
            "ambiguous",
            keys=("发行月报",),
        ),
        Case(
            "最新那期发行月报的退货率再核一下",
            "existing",
            ["recency"],
            "recency",
            target="report_mar",
            other="report_feb",
            keys=("发行月报",),
            layer="name",
        ),
        Case(
            "山海札记一校那个还有要改的吗",
            "clarify",
            ["ineligible", "similar_names"],
            "ineligible",
            keys=("一校",),
        ),
        Case("引文出处核对好了吗", "clarify", ["ineligible"], "ineligible", keys=("引文出处",)),
        Case(
            "帮我给公众号推文做个封面图",
            "clarify",
            ["no_match", "shared_word"],
            "none",
            keys=("推文", "公众号"),
        ),
        Case(
            "帮我新建一个任务，准备北京图书订货会的书目",
            "new",
            ["explicit_new"],
            "none",
            keys=("订货会",),
        ),
    ]
    fill = dict(
        n_today=3,
        n_week=8,
        n_old=11,
        today_min=ago(h=1, m=30),
        old_range=(ago(d=12), ago(d=90)),
        workspaces={"编辑部", "发行", "版权", "财务", "个人"},
    )
    return sid, now, specs, cases, fill


# --------------------------------------------------------------------------------------
# Snapshot 3: producer at an indie game studio (English), Thursday late afternoon.
# Two "Boss balance" tasks, two "Crash on boot" tasks (one with a long crash dump), a Steam
# upload with a long steamcmd log, a task named "New player …", two patch-note tasks, and
# the two most recent tasks touched 8 minutes apart.
# --------------------------------------------------------------------------------------


def snapshot_gamedev(rng: random.Random):
    sid = "gamedev-producer-2027-05-20"
    now = datetime.fromisoformat("2027-05-20T16:45:00-07:00")
    specs = [
        Spec(
            "boss_a2",
            "Boss balance – Act 2 (Hollow Warden)",
            "gameplay",
            ago(m=28),
            summary="Hollow Warden phase 2 is too punishing: 38% of playtesters quit there. Tuning HP and the slam telegraph.",
            messages=[
                ("user", "Playtest data says people rage-quit at the Warden."),
                (
                    "assistant",
                    "Phase 2 slam has a 0.35s telegraph and one-shots below 60% armor. Proposal: HP -12%, telegraph 0.5s. We could ship it in the next hotfix, 1.4.3.",
                ),
                ("user", "HP -12 feels like a lot, try -8 first"),
                (
                    "assistant",
                    "OK, -8% with the 0.5s telegraph goes into tonight's playtest build.",
                ),
            ],
        ),
        Spec(
            "boss_a3",
            "Boss balance – Act 3 (Ashen Choir)",
            "gameplay",
            ago(d=1, h=3),
            summary="Ashen Choir is trivial with the shield build; adding a shield-break phase.",
            messages=[
                ("user", "The Choir fight is a joke if you run the shield build."),
                (
                    "assistant",
                    "Shield blocks 100% of the choir's sound waves. A shield-break phase at 50% HP forces players to dodge instead.",
                ),
            ],
        ),
        Spec(
            "crash_ps5",
            "Crash on boot – PS5 devkit",
            "build",
            ago(h=4),
            state="blocked",
            summary="Build 0.9.812 crashes on boot on PS5 devkits after the SDK update.",
            messages=[
                ("user", "Since the SDK update the PS5 build dies on boot."),
                (
                    "assistant",
                    "It dies in trophy initialization: the new SDK rejects our unsigned trophy pack. We need to re-sign it with the new tool before the next submission.",
                ),
            ],
        ),
        Spec(
            "crash_xsx",
            "Crash on boot – Xbox Series devkit",
            "build",
            ago(d=2, h=2),
            state="waiting_for_user",
            summary="Build 0.9.812 crashes on boot on Xbox Series devkits; reading the crash dump.",
            messages=[
                ("user", "Xbox devkit crashes on boot too. Here's the dump's thread list."),
                *chunk(
                    crashdump_log(
                        rng,
                        "Thread 0x1F3C [AssetLoader] state=CRASHED  EXCEPTION_ACCESS_VIOLATION reading 0x0000000000000018 at Kestrel!ShaderCache::Load+0x1c4 (shadercache.cpp:412)",
                        73,
                        110,
                    ),
                    10,
                    2,
                ),
                (
                    "assistant",
                    "Most threads are just waiting; still looking for the one that actually faulted.",
                    60,
                ),
            ],
        ),
        Spec(
            "steam",
            "Steam depot upload failing",
            "build",
            ago(m=20),
            state="running",
            summary="steamcmd upload of the 1.4.3 candidate fails at the end; reading the log.",
            messages=[
                ("user", "The Steam upload for the hotfix candidate failed again, log attached."),
                *chunk(
                    steamcmd_log(
                        rng,
                        "ERROR! Failed to commit build for depot 2271843 (k_EResultLimitExceeded): manifest exceeds the per-depot file count limit",
                        131,
                        140,
                    ),
                    10,
                    2,
                ),
                (
                    "assistant",
                    "Uploads look fine chunk by chunk; scrolling to the end for the actual failure.",
                    45,
                ),
            ],
        ),
        Spec(
            "jp_loc",
            "Localization pass – Japanese",
            "liveops",
            ago(d=1, h=8),
            summary="JP pass: 41 UI strings overflow their buttons at 1080p; shortening with the translator.",
            messages=[
                ("user", "JP strings are overflowing the buttons."),
                (
                    "assistant",
                    "41 strings overflow at 1080p. The translator sent shorter variants for 30; the rest need a smaller font size.",
                ),
                ("user", "Another thing: player names with 髙 show up as tofu boxes", 172800),
                (
                    "tool",
                    "[FontFallback] missing glyph U+9AD9 in NotoSansJP-Regular subset (atlas jp_ui_01), fallback chain exhausted",
                ),
                (
                    "assistant",
                    "Our subset atlas only covers JIS level 1. Adding a dynamic fallback atlas for player names fixes the tofu without bloating the static atlas.",
                ),
            ],
        ),
        Spec(
            "new_player",
            "New player tutorial revamp",
            "gameplay",
            ago(h=6),
            summary="Rebuilding the first 20 minutes: 62% of first-time players skip the tutorial.",
            messages=[
                ("user", "Most people skip the tutorial and then die in the first camp."),
                (
                    "assistant",
                    "62% skip it. Replacing the skip button with a 'I've played souls-likes' choice that keeps the dodge lesson but drops the menu tour.",
                ),
            ],
        ),
        Spec(
            "patch142",
            "Patch 1.4.2 notes",
            "liveops",
            ago(d=8),
            summary="Crash fixes and Act 1 balance changes.",
            messages=[
                ("user", "Draft the notes for 1.4.2."),
                (
                    "assistant",
                    "Draft: 3 crash fixes, Act 1 archer damage -10%, co-op desync fix. Posted to the Steam news draft.",
                ),
            ],
        ),
        Spec(
            "patch143",
            "Patch 1.4.3 notes",
            "liveops",
            ago(h=5),
            summary="Hotfix notes: boss tuning, JP font fixes.",
            messages=[
                ("user", "Start the notes for the next hotfix."),
                (
                    "assistant",
                    "Skeleton is up: balance, localization, known issues. Waiting for final numbers from design.",
                ),
            ],
        ),
        Spec(
            "leads",
            "Weekly leads meeting agenda",
            "studio",
            ago(d=2),
            summary="Agenda for Monday's leads meeting: milestone review, hiring, outsourcing budget.",
            messages=[
                ("user", "Put together Monday's leads meeting agenda."),
                (
                    "assistant",
                    "Milestone review (20 min), two open hiring reqs (10 min), outsourcing budget for Act 4 (15 min).",
                ),
            ],
        ),
        Spec(
            "switch_crash",
            "Crash on boot – Switch devkit",
            "build",
            ago(d=6),
            archived=True,
            summary="Switch devkit boot crash: out of memory while loading the title screen.",
            messages=[
                ("user", "Switch devkit crashes on boot."),
                (
                    "assistant",
                    "Out of memory on the title screen; the 4K menu background was shipped unscaled.",
                ),
            ],
        ),
        Spec(
            "lunch",
            "Side chat: Friday team lunch",
            "studio",
            ago(h=3),
            labels=[SIDE_LABEL],
            messages=[
                ("user", "Where should we do team lunch Friday? 14 people."),
                (
                    "assistant",
                    "The taco place takes group bookings up to 16 if you call before noon Thursday.",
                ),
            ],
        ),
        Spec(
            "coord",
            "Coordinate: Act 2 player sentiment",
            "liveops",
            ago(h=7),
            role="coordination",
            messages=[
                ("assistant", "Dispatched a subtask: mine Steam reviews for Act 2 complaints.")
            ],
        ),
        Spec(
            "reviews",
            "Mine Steam reviews for Act 2 complaints",
            "liveops",
            ago(h=6, m=30),
            parent="coord",
            state="running",
            summary="1,900 reviews scanned; the Warden fight is mentioned in 23% of negative ones.",
            messages=[
                (
                    "assistant",
                    "Scanned 1,900 reviews; 23% of negative reviews mention the Warden fight.",
                )
            ],
        ),
    ]
    cases = [
        Case(
            "Warden phase 2 - did we settle on the HP number?",
            "existing",
            ["similar_names", "partial_name"],
            "unique",
            target="boss_a2",
            keys=("Warden",),
            layer="name",
        ),
        Case(
            "act 3 boss: give the shield-break phase a longer telegraph",
            "existing",
            ["similar_names"],
            "unique",
            target="boss_a3",
            keys=("Act 3",),
            layer="name",
        ),
        Case(
            "boss balance",
            "clarify",
            ["short_ambiguous", "similar_names"],
            "ambiguous",
            keys=("Boss balance",),
        ),
        Case(
            "PS5 启动崩溃那个有进展吗",
            "existing",
            ["similar_names", "mixed_zh_en"],
            "unique",
            target="crash_ps5",
            keys=("PS5",),
            layer="name",
        ),
        Case(
            "shadercache.cpp:412 那个空指针是不是缓存文件坏了",
            "existing",
            ["repetitive_logs", "identifiers", "mixed_zh_en", "similar_names"],
            "unique",
            target="crash_xsx",
            keys=("shadercache.cpp:412",),
            layer="evidence",
        ),
        Case(
            "crash on boot",
            "clarify",
            ["short_ambiguous", "similar_names"],
            "ambiguous",
            keys=("Crash on boot",),
        ),
        Case(
            "depot 2271843 LimitExceeded - is that the file count thing?",
            "existing",
            ["repetitive_logs", "identifiers"],
            "unique",
            target="steam",
            keys=("2271843",),
            layer="evidence",
        ),
        Case(
            "did the tofu boxes in player names get fixed",
            "existing",
            ["stale_summary"],
            "unique",
            target="jp_loc",
            keys=("tofu",),
            layer="evidence",
        ),
        Case(
            "日文本地化那个，按钮文字溢出还剩几个",
            "existing",
            ["mixed_zh_en", "partial_name"],
            "unique",
            target="jp_loc",
            keys=("Localization pass",),
            layer="name",
        ),
        Case(
            "new player tutorial - any feedback on the souls-likes choice?",
            "existing",
            ["name_contains_new"],
            "unique",
            target="new_player",
            keys=("New player tutorial",),
            layer="name",
        ),
        Case(
            "Start a new task for a survey of new players who quit in the first hour",
            "new",
            ["explicit_new", "name_contains_new"],
            "new_overlap",
            keys=("new player",),
        ),
        Case(
            "add the Warden nerf to the 1.4.3 patch notes",
            "existing",
            ["similar_names", "distractor_evidence"],
            "unique",
            target="patch143",
            keys=("Patch 1.4.3",),
            layer="name",
        ),
        Case(
            "patch notes",
            "clarify",
            ["short_ambiguous", "similar_names"],
            "ambiguous",
            keys=("patch", "notes"),
        ),
        Case(
            "leads meeting agenda: add 10 min on the Act 4 outsourcing numbers",
            "existing",
            ["partial_name"],
            "unique",
            target="leads",
            keys=("leads meeting",),
            layer="name",
        ),
        Case(
            "set up a meeting with the bank about the small business loan",
            "clarify",
            ["no_match", "shared_word"],
            "none",
            keys=("loan",),
        ),
        Case(
            "Switch devkit boot crash, any news?",
            "clarify",
            ["ineligible", "similar_names"],
            "ineligible",
            keys=("Switch devkit",),
        ),
        Case(
            "is the Steam review mining done?",
            "clarify",
            ["ineligible"],
            "ineligible",
            keys=("Steam reviews",),
        ),
        Case("keep going", "clarify", ["reference_only", "bare_reference"], "ref_tie"),
        Case(
            "new task: plan the discount for the Steam summer sale",
            "new",
            ["explicit_new"],
            "none",
            keys=("summer sale",),
        ),
    ]
    fill = dict(
        n_today=3,
        n_week=8,
        n_old=11,
        today_min=ago(h=1, m=10),
        old_range=(ago(d=10), ago(d=75)),
        workspaces={"gameplay", "build", "liveops", "art", "personal"},
        english_only=True,
    )
    return sid, now, specs, cases, fill


# --------------------------------------------------------------------------------------
# Snapshot 4: supply-chain lead at a hardware startup (mixed Chinese/English), window edge.
# Positions 1-7 and 30-34 are placed exactly. "PCB 打样 rev A" sits at position 33 while
# rev B and rev C are inside the window; 包材供应商比价 sits at 34 while 包材打样确认 is
# inside. Position 1 was touched 15 minutes ago, position 2 nineteen hours ago.
# --------------------------------------------------------------------------------------


def snapshot_hardware(rng: random.Random):
    sid = "hw-supply-edge-2027-06-08"
    now = datetime.fromisoformat("2027-06-08T18:10:00+08:00")
    keyed = {
        1: Spec(
            "pcb_revc",
            "PCB 打样 rev C",
            "硬件",
            ago(m=15),
            state="running",
            summary="主控板第三版打样：5 片，6 层板，USB 差分阻抗 90Ω，改了上一版的 BGA 焊盘。",
            messages=[
                ("user", "rev C 的 Gerber 发出去了吗"),
                ("assistant", "已经发给板厂，叠层 6 层，USB 差分 90Ω ±10%，预计 6 月 12 日到货。"),
                ("user", "到货以后先测阻抗，再贴片"),
                ("assistant", "好的，阻抗测试条和板子一起做，到货当天出结果。"),
            ],
        ),
        2: Spec(
            "batt",
            "电芯 MOQ 谈判",
            "供应链",
            ago(),
            state="waiting_for_user",
            summary="电芯供应商要求 MOQ 5000，我们想降到 2000，对方能接受但单价加 6%。",
            messages=[
                ("user", "电芯那家 MOQ 要 5000，首批用不了这么多"),
                (
                    "assistant",
                    "对方可以降到 2000，但单价加 6%；另一个选项是 5000 分三次交货，单价不变。",
                ),
                ("user", "另外他们的 UN38.3 测试报告还没给，海运要用", 259200),
                (
                    "assistant",
                    "催过了，第三方实验室排期到 6 月 15 日出报告。没有 UN38.3 报告的话，首批只能按样品走空运。",
                ),
            ],
        ),
        3: Spec(
            "new_vendor",
            "New vendor onboarding：东莞精研五金",
            "供应链",
            ago(),
            summary="新供应商（CNC 铝外壳）准入：审厂、样品承认、签质量协议。",
            messages=[
                ("user", "精研五金的审厂约在什么时候"),
                (
                    "assistant",
                    "约在下周二。审厂清单 42 项，重点看 CMM 检测能力和阳极氧化外协的管理。",
                ),
            ],
        ),
        4: Spec(
            "iqc",
            "来料检验不良：外壳卡扣",
            "品质",
            ago(),
            state="blocked",
            summary="外壳来料有一批卡扣不良，正在翻 IQC 记录找是哪一批。",
            messages=[
                ("user", "产线说外壳卡扣装不上，IQC 这两周的记录导出来了"),
                *chunk(
                    iqc_log(
                        rng,
                        "[IQC] 06-07 LOT 240607-13 外壳-下盖 卡扣断裂 NG 12/200 → 已判退，开 SCAR-0419 给华盛塑胶",
                        77,
                        100,
                    ),
                    10,
                    2,
                ),
                ("assistant", "前面的批次都是 PASS，我接着往后看。", 60),
            ],
        ),
        5: Spec(
            "pcb_revb",
            "PCB 打样 rev B",
            "硬件",
            ago(),
            summary="第二版回板 BGA 有虚焊，X-ray 确认是焊盘设计问题。",
            messages=[
                ("user", "第二版板子有几片开不了机"),
                ("assistant", "X-ray 看到主控 BGA 角上有虚焊，焊盘比钢网开口小，下一版要改焊盘。"),
            ],
        ),
        6: Spec(
            "fcc",
            "FCC 认证",
            "硬件",
            ago(),
            summary="FCC 认证送测，预计 7 月拿证。",
            messages=[
                ("user", "FCC 的测试结果出来了吗"),
                ("tool", "RE 30MHz-1GHz: FAIL @ 433.9MHz, margin -3.2dB (limit 46.0 dBuV/m, QP)"),
                (
                    "assistant",
                    "辐射发射在 433.9MHz 超了 3.2dB，像是 LoRa 模块的谐波，加屏蔽罩后再约复测。",
                ),
            ],
        ),
        7: Spec(
            "pack_sample",
            "包材打样确认",
            "供应链",
            ago(),
            summary="彩盒和内托打样，第二版颜色偏红。",
            messages=[
                ("user", "彩盒打样回来了，颜色不对"),
                ("assistant", "第二版偏红，色差 ΔE 4.1，要求印厂按潘通色卡重新调墨，下周再送样。"),
            ],
        ),
        30: Spec("wms", "深圳仓 WMS 切换", "供应链", ago(), activity="created"),
        31: Spec("bom", "BOM 成本核算 v3", "硬件", ago(), activity="status"),
        32: Spec(
            "hs",
            "出口 HS 编码归类",
            "供应链",
            ago(),
            messages=[
                ("user", "整机出口的 HS 编码归哪个"),
                ("assistant", "整机按 8517 归类的可能性大，配件要分开归，我整理一张对照表。"),
            ],
        ),
        33: Spec(
            "pcb_reva",
            "PCB 打样 rev A",
            "硬件",
            ago(),
            summary="第一版打样：6 层板，阻抗测试报告在等板厂。",
            messages=[
                ("user", "第一版的阻抗测试报告板厂给了吗"),
                ("assistant", "板厂说测试条还在做，下周给。"),
            ],
        ),
        34: Spec(
            "pack_quote",
            "包材供应商比价",
            "供应链",
            ago(),
            summary="三家包材供应商报价：彩盒 2.1–2.8 元/个。",
            messages=[
                ("user", "彩盒找几家比比价"),
                ("assistant", "三家报价 2.1 到 2.8 元/个，最便宜的那家起订量 1 万。"),
            ],
        ),
    }
    ineligible = [
        Spec(
            "ddp",
            "物流 DDP 报价",
            "供应链",
            ago(d=9),
            archived=True,
            summary="美国 DDP 门到门报价，含关税。",
            messages=[
                ("user", "DDP 到美国的报价问一下"),
                ("assistant", "两家货代 DDP 报价每公斤 38 和 42 元，含关税和清关。"),
            ],
        ),
        Spec(
            "gift",
            "闲聊：端午礼盒买哪家",
            "供应链",
            ago(h=1),
            labels=[SIDE_LABEL],
            messages=[
                ("user", "端午给供应商送礼盒，买哪家的"),
                ("assistant", "粽子礼盒两家对比，价格 168 和 198，第二家包装更好。"),
            ],
        ),
        Spec(
            "coord",
            "协调：Q3 备料计划",
            "供应链",
            ago(h=3),
            role="coordination",
            messages=[("assistant", "已派发子任务：汇总 12 家供应商交期。")],
        ),
        Spec(
            "leadtime",
            "汇总 12 家供应商交期",
            "供应链",
            ago(h=2, m=40),
            parent="coord",
            state="running",
            summary="12 家供应商的标准交期和加急交期汇总。",
            messages=[("assistant", "已收到 9 家的回复，主控芯片交期 16 周最长。")],
        ),
    ]
    cases = [
        Case(
            "接着弄", "existing", ["reference_only", "bare_reference"], "ref_top", target="pcb_revc"
        ),
        Case(
            "UN38.3 报告出来了没",
            "existing",
            ["stale_summary", "identifiers"],
            "unique",
            target="batt",
            keys=("UN38.3",),
            layer="evidence",
        ),
        Case(
            "电芯 MOQ 降到 2000 的话单价加多少来着",
            "existing",
            ["mixed_zh_en", "filler_words"],
            "unique",
            target="batt",
            keys=("MOQ",),
            layer="name",
        ),
        Case(
            "New vendor onboarding 那个审厂约好了吗",
            "existing",
            ["name_contains_new", "mixed_zh_en"],
            "unique",
            target="new_vendor",
            keys=("New vendor onboarding",),
            layer="name",
        ),
        Case(
            "精研五金的质量协议签了没",
            "existing",
            ["partial_name"],
            "unique",
            target="new_vendor",
            keys=("精研",),
            layer="name",
        ),
        Case(
            "SCAR-0419 华盛回复了吗",
            "existing",
            ["repetitive_logs", "identifiers"],
            "unique",
            target="iqc",
            keys=("SCAR-0419",),
            layer="evidence",
        ),
        Case(
            "rev B 那批板子的 X-ray 结果发我一下",
            "existing",
            ["similar_names", "mixed_zh_en"],
            "unique",
            target="pcb_revb",
            keys=("rev B",),
            layer="name",
        ),
        Case(
            "PCB 打样",
            "clarify",
            ["short_ambiguous", "similar_names"],
            "ambiguous",
            keys=("PCB 打样",),
        ),
        Case(
            "433.9MHz 超标那个，屏蔽罩加了再约复测吧",
            "existing",
            ["identifiers", "filler_words"],
            "unique",
            target="fcc",
            keys=("433.9",),
            layer="evidence",
        ),
        Case(
            "FCC cert - when is the retest?",
            "existing",
            ["mixed_zh_en"],
            "unique",
            target="fcc",
            keys=("FCC",),
            layer="name",
        ),
        Case(
            "包材打样",
            "existing",
            ["short_unique", "similar_names"],
            "unique",
            target="pack_sample",
            keys=("包材打样",),
            layer="name",
        ),
        Case(
            "WMS 切换那个帮我开个头吧",
            "existing",
            ["position_33", "filler_words", "mixed_zh_en"],
            "unique",
            target="wms",
            keys=("WMS",),
            layer="name",
            position=30,
        ),
        Case(
            "BOM 成本核算 v3 更新一下",
            "existing",
            ["position_33", "mixed_zh_en"],
            "unique",
            target="bom",
            keys=("BOM 成本核算",),
            layer="name",
            position=31,
        ),
        Case(
            "HS 编码归类那个，充电器单独归哪个码",
            "existing",
            ["position_33", "partial_name"],
            "unique",
            target="hs",
            keys=("HS 编码",),
            layer="name",
            position=32,
        ),
        Case(
            "rev A 的阻抗测试报告板厂给了吗",
            "clarify",
            ["position_33", "similar_names", "mixed_zh_en"],
            "ineligible",
            keys=("rev A",),
            position=33,
        ),
        Case(
            "包材供应商比价做完了吗",
            "clarify",
            ["position_33", "similar_names"],
            "ineligible",
            keys=("包材", "比价"),
            position=34,
        ),
        Case("DDP 报价那个接着谈", "clarify", ["ineligible"], "ineligible", keys=("DDP",)),
        Case(
            "供应商交期汇总好了没",
            "clarify",
            ["ineligible"],
            "ineligible",
            keys=("供应商交期",),
        ),
        Case(
            "帮我看下体检报告里尿酸偏高要不要紧",
            "clarify",
            ["no_match", "shared_word"],
            "none",
            keys=("尿酸",),
        ),
        Case(
            "新建任务：跟进 rev C 的 SMT 贴片排产",
            "new",
            ["explicit_new", "mixed_zh_en"],
            "new_overlap",
            keys=("rev C",),
        ),
        Case(
            "另起一个，专门跟 ODM 谈整机代工报价",
            "new",
            ["explicit_new"],
            "none",
            keys=("ODM",),
        ),
    ]
    fill = dict(
        ranked=keyed,
        n_eligible=40,
        ineligible=ineligible,
        workspaces={"供应链", "品质", "硬件", "财务", "个人"},
    )
    return sid, now, [*keyed.values(), *ineligible], cases, fill


# --------------------------------------------------------------------------------------
# Snapshot 5: a parent with two kids, 小宇 (三年级) and 朵朵 (幼儿园大班), Saturday morning.
# One task was touched 25 minutes ago and everything else last night or earlier, so a bare
# "继续" has a clear referent. Two 秋游回执 tasks (one per kid), a task named 新学期…, a
# photo backup with a long rsync log, and two 班级群通知整理 tasks 23 days apart.
# --------------------------------------------------------------------------------------


def snapshot_family(rng: random.Random):
    sid = "family-school-2027-09-11"
    now = datetime.fromisoformat("2027-09-11T09:40:00+08:00")
    specs = [
        Spec(
            "trip_xy",
            "小宇秋游回执",
            "学校",
            ago(m=25),
            state="waiting_for_user",
            summary="三年级 9 月 24 日秋游去植物园，回执周一交，费用 85 元。",
            messages=[
                ("user", "小宇学校秋游的回执怎么填"),
                (
                    "assistant",
                    "要填过敏史和紧急联系人，费用 85 元在班级群接龙付。那天要穿校服、带水壶。",
                ),
                ("user", "过敏史写花生过敏，紧急联系人写他外婆"),
                ("assistant", "好的，回执填好了，周一早上记得让他带去。"),
            ],
            pace=120,
        ),
        Spec(
            "trip_dd",
            "朵朵秋游回执",
            "学校",
            ago(h=14),
            summary="幼儿园大班秋游去农场，需要一位家长陪同，回执周三前交。",
            messages=[
                ("user", "朵朵幼儿园也要秋游"),
                ("assistant", "9 月 17 日去郊区农场，需要一位家长全程陪同，回执周三前交给班主任。"),
            ],
        ),
        Spec(
            "uniform",
            "校服订购",
            "学校",
            ago(d=2),
            summary="小宇秋冬校服：冲锋衣 + 运动裤，尺码 140。",
            messages=[
                ("user", "小宇秋冬校服要订了"),
                (
                    "assistant",
                    "冲锋衣一件、运动裤两条，按去年 130 的尺码往上加一码订 140，总价 386 元。",
                ),
            ],
        ),
        Spec(
            "class_new",
            "新学期课外班安排",
            "家里",
            ago(d=1, h=2),
            summary="小宇周三编程课、周六游泳，朵朵周日钢琴启蒙。",
            messages=[
                ("user", "新学期两个孩子的课外班排一下"),
                (
                    "assistant",
                    "小宇周三编程课、周六上午游泳；朵朵周日下午钢琴启蒙。周六上午两个人时间会冲突。",
                ),
                ("user", "编程课和学校的数学兴趣小组撞了，编程课不上了", 86400),
                (
                    "assistant",
                    "机构说编程课可以申请退费，剩下 12 节按比例退，需要填一张申请表，我先帮你填好。",
                ),
            ],
        ),
        Spec(
            "party",
            "小宇十岁生日派对",
            "家里",
            ago(d=3),
            summary="10 月 2 日在家办生日派对，请 8 个小朋友。",
            messages=[
                ("user", "小宇生日想请同学来家里"),
                (
                    "assistant",
                    "请同班 5 个，加上编程课上认识的 3 个小朋友，一共 8 个。蛋糕订 8 寸的就够。",
                ),
            ],
        ),
        Spec(
            "dental",
            "朵朵看牙",
            "家里",
            ago(d=4),
            summary="朵朵下排乳牙有两颗龋齿，9 月 2 日补牙。",
            messages=[
                ("user", "朵朵说牙疼"),
                ("assistant", "检查是下排两颗乳牙龋齿，约了 9 月 2 日补牙，补完一周内别吃太硬的。"),
                ("user", "补好了。医生说六岁牙长出来了", 518400),
                ("assistant", "医生建议做窝沟封闭，已经约了 9 月 18 日下午 3 点，社区医院口腔科。"),
            ],
        ),
        Spec(
            "nas",
            "家里 NAS 照片备份",
            "家里",
            ago(d=1, h=1),
            state="blocked",
            summary="手机照片自动备份到 NAS，这次同步报错了，正在看 rsync 日志。",
            messages=[
                ("user", "照片备份又报错了，日志贴给你"),
                *chunk(
                    rsync_log(
                        rng,
                        'rsync: [sender] send_files failed to open "/volume1/photos/2027/0815_海边/IMG_4471.HEIC": Permission denied (13)',
                        96,
                        130,
                    ),
                    10,
                    2,
                ),
                ("assistant", "前面都传成功了，我接着往下找报错的是哪一张。", 60),
            ],
        ),
        Spec(
            "gn_old",
            "班级群通知整理",
            "学校",
            ago(d=24),
            summary="暑假最后两周的班级群通知：开学时间、返校要求、暑假作业上交。",
            messages=[
                ("user", "班级群消息太多了，帮我把通知整理一下"),
                (
                    "assistant",
                    "8 月 31 日返校，9 月 1 日正式上课；暑假作业返校当天交，要带好新书包书皮。",
                ),
            ],
        ),
        Spec(
            "gn_new",
            "班级群通知整理",
            "学校",
            ago(h=16),
            summary="开学第二周的班级群通知：作业要求、午托缴费、家长会时间。",
            messages=[
                ("user", "这周班级群又刷了几百条，整理一下"),
                (
                    "assistant",
                    "三件事：数学作业改成每天一页口算；午托费本周五前交；家长会定在下周四晚上 7 点。",
                ),
            ],
        ),
        Spec(
            "pta",
            "家长会发言稿",
            "学校",
            ago(d=2, h=5),
            summary="下周四家长会，作为家委会代表发言 5 分钟。",
            messages=[
                ("user", "家长会我要代表家委会发言"),
                (
                    "assistant",
                    "5 分钟大概 900 字：感谢老师、介绍家委会这学期的三件事、请家长支持秋游和运动会的志愿者报名。",
                ),
            ],
        ),
        Spec(
            "swim",
            "暑假游泳班",
            "家里",
            ago(d=20),
            archived=True,
            summary="暑假游泳班 20 节课，8 月结课。",
            messages=[
                ("user", "暑假游泳班报哪个"),
                ("assistant", "体育馆的 20 节课 1600 元，小班 6 人，8 月中旬结课。"),
            ],
        ),
        Spec(
            "midautumn",
            "闲聊：中秋回谁家",
            "家里",
            ago(h=13),
            labels=[SIDE_LABEL],
            messages=[
                ("user", "中秋今年回谁家"),
                ("assistant", "去年在爷爷奶奶家过的，今年可以去外公外婆家，提前跟两边说好。"),
            ],
        ),
        Spec(
            "coord",
            "协调：孩子课外阅读",
            "家里",
            ago(d=1),
            role="coordination",
            messages=[("assistant", "已派发子任务：比较三家英语绘本订阅。")],
        ),
        Spec(
            "books",
            "比较三家英语绘本订阅",
            "家里",
            ago(h=22),
            parent="coord",
            state="running",
            summary="三家英语绘本订阅的价格、分级和配套音频对比。",
            messages=[("assistant", "三家月费 99 到 159 元，第二家分级最细，配套音频是真人朗读。")],
        ),
    ]
    cases = [
        Case(
            "继续刚才那个",
            "existing",
            ["reference_only", "bare_reference"],
            "ref_top",
            target="trip_xy",
        ),
        Case(
            "接着弄吧",
            "existing",
            ["reference_only", "bare_reference", "filler_words"],
            "ref_top",
            target="trip_xy",
        ),
        Case(
            "秋游回执",
            "clarify",
            ["short_ambiguous", "similar_names"],
            "ambiguous",
            keys=("秋游回执",),
        ),
        Case(
            "小宇秋游",
            "existing",
            ["short_unique", "similar_names"],
            "unique",
            target="trip_xy",
            keys=("小宇秋游",),
            layer="name",
        ),
        Case(
            "朵朵秋游要家长陪同那个，我请好假了",
            "existing",
            ["similar_names", "filler_words"],
            "unique",
            target="trip_dd",
            keys=("朵朵秋游",),
            layer="name",
        ),
        Case(
            "校服订购的尺码改成 150 吧",
            "existing",
            ["name_over_logs", "filler_words"],
            "unique",
            target="uniform",
            keys=("校服订购",),
            layer="name",
        ),
        Case(
            "新学期课外班那个，周六游泳换到周日",
            "existing",
            ["name_contains_new"],
            "unique",
            target="class_new",
            keys=("新学期课外班",),
            layer="name",
        ),
        Case(
            "编程课退费那个办了没",
            "existing",
            ["distractor_evidence"],
            "unique",
            target="class_new",
            keys=("编程课", "退费"),
            layer="evidence",
        ),
        Case(
            "小宇生日派对的蛋糕订了没",
            "existing",
            ["partial_name"],
            "unique",
            target="party",
            keys=("生日派对",),
            layer="name",
        ),
        Case(
            "窝沟封闭约的几号来着",
            "existing",
            ["stale_summary"],
            "unique",
            target="dental",
            keys=("窝沟封闭",),
            layer="evidence",
        ),
        Case(
            "IMG_4471 那张权限不对的照片怎么弄",
            "existing",
            ["repetitive_logs", "identifiers", "mixed_zh_en"],
            "unique",
            target="nas",
            keys=("IMG_4471",),
            layer="evidence",
        ),
        Case(
            "家长会发言稿再改短一点",
            "existing",
            ["name_over_logs"],
            "unique",
            target="pta",
            keys=("发言稿",),
            layer="name",
        ),
        Case(
            "班级群通知整理一下",
            "clarify",
            ["recency", "similar_names"],
            "ambiguous",
            keys=("班级群通知",),
        ),
        Case(
            "这周的班级群通知再补一下作业那部分",
            "existing",
            ["recency"],
            "recency",
            target="gn_new",
            other="gn_old",
            keys=("班级群通知",),
            layer="name",
        ),
        Case("暑假游泳班的发票开了吗", "clarify", ["ineligible"], "ineligible", keys=("暑假游泳",)),
        Case("英语绘本订阅比较好了吗", "clarify", ["ineligible"], "ineligible", keys=("绘本订阅",)),
        Case(
            "帮我写一篇公司年会的发言稿",
            "clarify",
            ["no_match", "shared_word"],
            "none",
            keys=("年会",),
        ),
        Case("帮我查一下去年的个税退了多少", "clarify", ["no_match"], "none", keys=("个税",)),
        Case(
            "新建一个任务：国庆带孩子去哪玩",
            "new",
            ["explicit_new"],
            "none",
            keys=("国庆",),
        ),
    ]
    fill = dict(
        n_today=0,
        n_week=9,
        n_old=13,
        week_min=ago(h=15),
        old_range=(ago(d=9), ago(d=60)),
        workspaces={"家里", "学校", "个人"},
    )
    return sid, now, specs, cases, fill


# --------------------------------------------------------------------------------------
# Snapshot 6: PhD student abroad, close to midnight (tasks in English, requests in both).
# Chapter 3 and Chapter 4 revisions were both worked on within the last hour, so a bare
# "继续" has no clear referent. Two contrastive-pretraining sweeps with long interleaved
# training logs, a rebuttal whose summary is stale, a task named "New dataset …", and two
# "Group meeting slides" tasks three weeks apart.
# --------------------------------------------------------------------------------------


def snapshot_phd(rng: random.Random):
    sid = "phd-late-night-2027-11-03"
    now = datetime.fromisoformat("2027-11-03T23:50:00+01:00")
    specs = [
        Spec(
            "ch3",
            "Chapter 3 revisions",
            "thesis",
            ago(m=12),
            summary="Advisor comments on Ch.3 (method): notation for the contrastive loss and a missing complexity analysis.",
            messages=[
                ("user", "My advisor says Ch.3 needs a complexity analysis."),
                (
                    "assistant",
                    "The sampler is O(n log n) per batch; I drafted a half-page analysis with the memory cost of the queue.",
                ),
                ("user", "也把 loss 的记号统一一下"),
                ("assistant", "好，统一成 notation table 里的写法，τ 只表示温度。"),
            ],
            pace=240,
        ),
        Spec(
            "ch4",
            "Chapter 4 revisions",
            "thesis",
            ago(m=50),
            summary="Ch.4 (experiments): reorganize the tables and add the cross-domain results.",
            messages=[
                ("user", "Ch.4 tables are a mess."),
                (
                    "assistant",
                    "Merged the six result tables into three: in-domain, cross-domain, ablations. Cross-domain numbers go in Table 4.2.",
                ),
            ],
            pace=240,
        ),
        Spec(
            "rebuttal",
            "ICLR rebuttal",
            "lab",
            ago(h=3),
            state="waiting_for_user",
            summary="Rebuttal for submission #4127: responses to R1 (ablation on the temperature) and R3 (compute cost).",
            messages=[
                (
                    "user",
                    "Reviews are out. R1 wants a temperature ablation, R3 asks about compute.",
                ),
                (
                    "assistant",
                    "Drafted both: the temperature ablation table from the sweep, and a GPU-hours comparison for R3.",
                ),
                (
                    "user",
                    "R2 刚更新了评审意见，说我们的 GraphSAGE baseline 数字是旧实现跑的",
                    86400,
                ),
                (
                    "assistant",
                    "Re-ran GraphSAGE with the current PyG defaults: +1.8 points for the baseline, our margin drops to 2.1 but stays significant. Drafted the reply to R2.",
                ),
            ],
        ),
        Spec(
            "sweep_lr",
            "Sweep: contrastive pretraining lr",
            "lab",
            ago(h=5),
            state="running",
            summary="Learning-rate sweep for contrastive pretraining, 4 runs; one run diverged, reading logs.",
            messages=[
                ("user", "One of the lr sweep runs died overnight, logs below."),
                *chunk(
                    train_log(
                        rng,
                        ["cp-lr1e4-s1", "cp-lr1e4-s2", "cp-lr3e4-s1"],
                        "[cp-lr3e4-s2] step  41200 | loss nan | grad_norm inf | stopping: non-finite loss",
                        103,
                        140,
                    ),
                    10,
                    2,
                ),
                (
                    "assistant",
                    "The other runs look healthy; still looking for the one that stopped.",
                    60,
                ),
            ],
        ),
        Spec(
            "sweep_bs",
            "Sweep: contrastive pretraining batch size",
            "lab",
            ago(d=1, h=3),
            state="waiting_for_user",
            summary="Batch-size sweep for contrastive pretraining, 3 runs; one crashed, reading logs.",
            messages=[
                ("user", "Batch size sweep: one run crashed right after starting."),
                *chunk(
                    train_log(
                        rng,
                        ["cp-bs256-s1", "cp-bs512-s1"],
                        "[cp-bs1024-s1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.65 GiB total capacity)",
                        12,
                        120,
                    ),
                    10,
                    2,
                ),
                ("assistant", "Saved the logs; the two smaller runs are fine so far.", 60),
            ],
        ),
        Spec(
            "visa",
            "Residence permit renewal",
            "admin",
            ago(d=2),
            summary="Residence permit expires Dec 15; need enrollment certificate, health insurance letter and the 100 EUR fee.",
            messages=[
                ("user", "My residence permit runs out in December."),
                (
                    "assistant",
                    "Book the appointment now, slots are 4-5 weeks out. Bring the enrollment certificate, insurance letter and 100 EUR.",
                ),
            ],
        ),
        Spec(
            "newds",
            "New dataset license check (OpenCity-3D)",
            "lab",
            ago(d=1, h=6),
            summary="Can OpenCity-3D (CC BY-NC 4.0) be used in the industry collaboration? Asked the tech transfer office.",
            messages=[
                ("user", "Can we use OpenCity-3D in the project with the company?"),
                (
                    "assistant",
                    "It's CC BY-NC 4.0, so commercial use is out unless the authors grant an exception. Emailed the tech transfer office.",
                ),
            ],
        ),
        Spec(
            "gm_old",
            "Group meeting slides",
            "lab",
            ago(d=22),
            summary="Slides for the Oct 13 group meeting: first sweep results.",
            messages=[
                ("user", "Make slides for group meeting."),
                (
                    "assistant",
                    "8 slides: motivation, method sketch, first learning-rate results, open questions.",
                ),
            ],
        ),
        Spec(
            "gm_new",
            "Group meeting slides",
            "lab",
            ago(d=1, h=1),
            summary="Slides for the Nov 4 group meeting: rebuttal status and thesis plan.",
            messages=[
                ("user", "Group meeting is Thursday, need slides again."),
                (
                    "assistant",
                    "6 slides: rebuttal status, what changes in the thesis chapters, timeline to the full draft.",
                ),
            ],
        ),
        Spec(
            "ch2",
            "Chapter 2 revisions",
            "thesis",
            ago(d=15),
            archived=True,
            summary="Ch.2 (background) revisions, done and sent to the advisor.",
            messages=[
                ("user", "Ch.2 comments are mostly about related work."),
                (
                    "assistant",
                    "Rewrote section 2.3 and added the missing 2026 papers; sent to the advisor.",
                ),
            ],
        ),
        Spec(
            "grinder",
            "Side chat: espresso grinder",
            "personal",
            ago(h=9),
            labels=[SIDE_LABEL],
            messages=[
                ("user", "Which espresso grinder under 300 EUR?"),
                (
                    "assistant",
                    "A flat-burr model with stepless adjustment is the usual pick in that range.",
                ),
            ],
        ),
        Spec(
            "coord",
            "Coordinate: related work refresh",
            "thesis",
            ago(h=8),
            role="coordination",
            messages=[
                (
                    "assistant",
                    "Dispatched a subtask: summarize recent papers on test-time adaptation.",
                )
            ],
        ),
        Spec(
            "tta",
            "Summarize 40 papers on test-time adaptation",
            "thesis",
            ago(h=7, m=30),
            parent="coord",
            state="running",
            summary="Summaries of 40 test-time adaptation papers, grouped by method family.",
            messages=[
                (
                    "assistant",
                    "31 of 40 summarized; grouped into entropy-minimization, BN-statistics and augmentation methods.",
                )
            ],
        ),
    ]
    cases = [
        Case("继续", "clarify", ["reference_only", "bare_reference"], "ref_unclear"),
        Case(
            "keep going on that one", "clarify", ["reference_only", "bare_reference"], "ref_unclear"
        ),
        Case(
            "Chapter 3 那个 complexity analysis 写完了吗",
            "existing",
            ["similar_names", "mixed_zh_en"],
            "unique",
            target="ch3",
            keys=("Chapter 3",),
            layer="name",
        ),
        Case(
            "Ch.4 的 cross-domain 表格弄好了吗",
            "existing",
            ["similar_names", "mixed_zh_en"],
            "unique",
            target="ch4",
            keys=("cross-domain",),
            layer="summary",
        ),
        Case(
            "chapter revisions",
            "clarify",
            ["short_ambiguous", "similar_names"],
            "ambiguous",
            keys=("Chapter", "revisions"),
        ),
        Case(
            "R2 说 GraphSAGE baseline 过时那条怎么回",
            "existing",
            ["stale_summary", "mixed_zh_en"],
            "unique",
            target="rebuttal",
            keys=("GraphSAGE",),
            layer="evidence",
        ),
        Case(
            "#4127 rebuttal deadline is friday right?",
            "existing",
            ["identifiers"],
            "unique",
            target="rebuttal",
            keys=("4127",),
            layer="summary",
        ),
        Case(
            "cp-lr3e4-s2 在 41200 步 NaN 了，是不是 warmup 太短",
            "existing",
            ["repetitive_logs", "identifiers", "mixed_zh_en", "similar_names"],
            "unique",
            target="sweep_lr",
            keys=("cp-lr3e4-s2",),
            layer="evidence",
        ),
        Case(
            "bs1024 那个 OOM 要不要开 gradient checkpointing",
            "existing",
            ["repetitive_logs", "identifiers", "similar_names"],
            "unique",
            target="sweep_bs",
            keys=("bs1024",),
            layer="evidence",
        ),
        Case(
            "sweep results?",
            "clarify",
            ["short_ambiguous", "similar_names"],
            "ambiguous",
            keys=("Sweep",),
        ),
        Case(
            "居留许可续签的材料齐了吗",
            "existing",
            ["mixed_zh_en"],
            "unique",
            target="visa",
            keys=("Residence permit",),
            layer="name",
        ),
        Case(
            "OpenCity-3D 能用在企业合作项目里吗",
            "existing",
            ["mixed_zh_en", "identifiers"],
            "unique",
            target="newds",
            keys=("OpenCity-3D",),
            layer="name",
        ),
        Case(
            "the new dataset license thing - did tech transfer reply?",
            "existing",
            ["name_contains_new", "partial_name"],
            "unique",
            target="newds",
            keys=("New dataset license",),
            layer="name",
        ),
        Case(
            "group meeting slides",
            "clarify",
            ["recency", "short_ambiguous"],
            "ambiguous",
            keys=("Group meeting slides",),
        ),
        Case(
            "for tomorrow's group meeting slides, add the NaN loss curve",
            "existing",
            ["recency"],
            "recency",
            target="gm_new",
            other="gm_old",
            keys=("Group meeting slides",),
            layer="name",
        ),
        Case(
            "reschedule my meeting with the landlord about the heating",
            "clarify",
            ["no_match", "shared_word"],
            "none",
            keys=("landlord", "heating"),
        ),
        Case(
            "chapter 2 的修改意见还有没处理的吗",
            "clarify",
            ["ineligible", "similar_names", "mixed_zh_en"],
            "ineligible",
            keys=("Chapter 2",),
        ),
        Case(
            "TTA 那 40 篇论文总结好了吗",
            "clarify",
            ["ineligible", "mixed_zh_en"],
            "ineligible",
            keys=("test-time adaptation",),
        ),
        Case(
            "new task: draft the ethics approval form for the user study",
            "new",
            ["explicit_new"],
            "none",
            keys=("ethics",),
        ),
        Case(
            "新开一个任务，把 Chapter 3 的图重画一下",
            "new",
            ["explicit_new", "mixed_zh_en"],
            "new_overlap",
            keys=("Chapter 3",),
        ),
    ]
    fill = dict(
        n_today=2,
        n_week=9,
        n_old=12,
        today_min=ago(h=2),
        old_range=(ago(d=9), ago(d=70)),
        workspaces={"thesis", "lab", "admin", "personal"},
    )
    return sid, now, specs, cases, fill


SNAPSHOTS = [
    snapshot_hospital,
    snapshot_press,
    snapshot_gamedev,
    snapshot_hardware,
    snapshot_family,
    snapshot_phd,
]
SHORT = {
    "hospital-it-2027-03-09": "hit",
    "press-editor-2027-04-14": "pub",
    "gamedev-producer-2027-05-20": "game",
    "hw-supply-edge-2027-06-08": "hw",
    "family-school-2027-09-11": "fam",
    "phd-late-night-2027-11-03": "phd",
}

SHORT_MAX = 20  # characters: a one- or two-word request


def extra_check(c: Case, tgt: dict | None, where: str) -> None:
    """This dataset's own rules: every case is tagged, and the tags it adds hold."""
    assert c.tags, where
    if "name_contains_new" in c.tags:
        assert c.expect in ("existing", "new"), where
        if c.expect == "existing":
            assert tgt is not None, where
            assert "new" in tgt["name"].lower() or "新" in tgt["name"], where
        else:
            assert c.check == "new_overlap", where
            assert any("new" in k.lower() or "新" in k for k in c.keys), where
    if "explicit_new" in c.tags:
        assert c.expect == "new" and c.check in ("none", "new_overlap"), where
    if c.expect == "new":
        assert "explicit_new" in c.tags, where
    if "short_ambiguous" in c.tags:
        assert c.expect == "clarify" and c.check == "ambiguous", where
        assert len(c.request) <= SHORT_MAX, where
    if "short_unique" in c.tags:
        assert c.expect == "existing" and c.check == "unique", where
        assert len(c.request) <= SHORT_MAX, where
    if "shared_word" in c.tags or "no_match" in c.tags:
        assert c.expect == "clarify" and c.check == "none", where
    if "bare_reference" in c.tags:
        assert "reference_only" in c.tags, where
        assert c.check in ("ref_top", "ref_tie", "ref_unclear"), where
        assert (c.expect == "existing") == (c.check == "ref_top"), where
    if "ineligible" in c.tags or "position_33" in c.tags:
        assert c.check in ("ineligible", "unique"), where
        assert (c.expect == "clarify") == (c.check == "ineligible"), where
    if "recency" in c.tags:
        # Equal matches: clarify unless the request itself says which one (then existing).
        assert (c.expect, c.check) in (("clarify", "ambiguous"), ("existing", "recency")), where
    if c.check == "ambiguous":
        assert c.expect == "clarify", where


def main() -> None:
    ds = Dataset(
        OUT,
        SEED,
        SNAPSHOTS,
        SHORT,
        ALLOWED_TAGS,
        WS_SLUG,
        FILLERS,
        min_cases=90,
        max_snapshots=6,
        completion_count=True,
        extra_check=extra_check,
    )
    generate(ds)


if __name__ == "__main__":
    main()

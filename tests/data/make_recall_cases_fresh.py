# ruff: noqa: E501
"""Generate ``tests/data/recall_cases_fresh.json``: a second, router-independent recall benchmark.

Same schema and rules as ``make_recall_cases.py`` ("maka.recall-eval.v1"), but new people,
workspaces, task names and wording, written without looking at the router. It adds the kinds
users found misrouted in practice:

* a task whose *name* contains "new" / 新 / 新建, referred to by that name (expected: existing);
* a bare continuation word (继续, 接着, "keep going") when no task clearly stands out (clarify);
* a one-word / very short request that fits two tasks equally (clarify);
* Chinese requests wrapped in particles and filler (把, 的, 一下, 吧, 呢);
* requests that name a task by a partial name or a synonym.

Each snapshot is a frozen list of a user's task Sessions at a given ``now``; each case is a new
user request plus the Session it should be routed to (``existing``), ``new`` (the user explicitly
asked for a new task) or ``clarify`` (ambiguous, or nothing eligible matches).

Content is written by hand; filler sessions, timestamps, states and repetitive log lines come from
a seeded RNG, so the output is byte-for-byte deterministic.

Before writing, the generator recomputes the eligible ordering of every snapshot from the JSON
itself (not archived, no role, no subagent parent, no ``mode:side_conversation`` label; ordered by
``last_message_at ?? status_updated_at ?? created_at`` descending, ties by id; the first 32 are
candidates) and asserts that every expectation is consistent with it. The machinery (specs,
building, verification, writing) is shared with ``make_recall_cases.py`` in ``recall_kit.py``;
this file adds its own tags and the checks that go with them (:func:`extra_check`).

Run: ``.venv/bin/python tests/data/make_recall_cases_fresh.py``
"""

from __future__ import annotations

import random
from datetime import datetime
from pathlib import Path

from recall_kit import BASE_TAGS, SIDE_LABEL, Case, Dataset, Filler, Spec, ago, chunk, generate

SEED = 20270203
OUT = Path(__file__).with_name("recall_cases_fresh.json")

ALLOWED_TAGS = BASE_TAGS | {
    # added for this dataset
    "name_contains_new",
    "bare_continuation",
    "short_ambiguous",
    "filler_words",
    "partial_name",
}

WS_SLUG = {
    "研发": "rd",
    "财务": "fin",
    "市场": "mkt",
    "销售": "sales",
    "生活": "life",
    "学习": "study",
    "法务": "legal",
    "行政": "admin",
    "数仓": "dw",
    "理财": "money",
    "孩子": "kids",
}

# --------------------------------------------------------------------------------------
# Filler pool: (workspace, name, summary | None, messages)
# --------------------------------------------------------------------------------------

FILLERS: list[Filler] = [
    # --- 研发 (Chinese backend team) ---
    (
        "研发",
        "消息队列选型",
        "在 RocketMQ 和 NATS 之间选型，重点看延迟消息和运维成本。",
        [
            ("user", "延迟消息用哪个 MQ 比较好？"),
            (
                "assistant",
                "RocketMQ 原生支持 18 个延迟级别，NATS JetStream 需要自己实现；运维上 NATS 更轻。团队以 Java 为主的话建议 RocketMQ。",
            ),
        ],
    ),
    (
        "研发",
        "单测覆盖率提升",
        "把核心模块单测覆盖率从 52% 提到 70%。",
        [
            ("user", "核心模块覆盖率才 52%，季度目标是 70%"),
            (
                "assistant",
                "覆盖率最低的是结算和优惠券两个包，先补这两个的分支用例，预计能到 63%。",
            ),
        ],
    ),
    (
        "研发",
        "接口文档迁移到 Apifox",
        None,
        [
            ("user", "Swagger 文档太乱了，迁到 Apifox 吧"),
            ("assistant", "可以直接导入 OpenAPI 3.0 文件，分组按服务拆，Mock 规则需要手动补。"),
        ],
    ),
    (
        "研发",
        "慢 SQL 治理",
        "每周导出 TOP 20 慢查询并逐条优化。",
        [
            ("user", "这周的慢查询排行出来了吗"),
            (
                "assistant",
                "TOP 20 里有 11 条是同一个报表查询，缺少 (shop_id, created_at) 联合索引，加上后平均耗时从 3.2s 降到 80ms。",
            ),
        ],
    ),
    (
        "研发",
        "lint 规则统一",
        "统一 golangci-lint 规则，CI 中强制检查。",
        [
            ("user", "各个仓库的 lint 配置都不一样"),
            (
                "assistant",
                "整理了一份公共 .golangci.yml，开启 errcheck、gosec、revive，先在 CI 里以 warning 方式跑两周。",
            ),
        ],
    ),
    (
        "研发",
        "灰度发布方案",
        "基于请求头和用户尾号的灰度路由方案。",
        [
            ("user", "想做按用户尾号的灰度"),
            (
                "assistant",
                "在网关按 uid 尾号路由到 canary 版本，先放 5%，观察错误率和 p99 两个指标再放量。",
            ),
        ],
    ),
    (
        "研发",
        "分布式锁改造",
        "把基于 MySQL 行锁的任务抢占改成 Redisson 锁。",
        [
            ("user", "任务抢占用 select for update 太重了"),
            ("assistant", "改成 Redisson 的 RLock，看门狗自动续期，锁粒度按任务 ID。"),
        ],
    ),
    (
        "研发",
        "定时任务迁移到 XXL-JOB",
        "把散落在各服务里的 @Scheduled 任务统一迁到 XXL-JOB。",
        [
            ("user", "各服务里的定时任务统计一下"),
            (
                "assistant",
                "共 37 个 @Scheduled 任务，其中 9 个有多实例重复执行的问题，优先迁这 9 个。",
            ),
        ],
    ),
    (
        "研发",
        "缓存雪崩预案",
        None,
        [
            ("user", "缓存同时过期的话数据库扛得住吗"),
            (
                "assistant",
                "热点 key 过期时间加随机抖动，再加一层本地缓存和请求合并，数据库 QPS 峰值能压到原来的 1/5。",
            ),
        ],
    ),
    (
        "研发",
        "技术分享：DDD 实践",
        "准备 1 月底的 DDD 实践内部分享，40 分钟。",
        [
            ("user", "帮我准备一个 DDD 的内部分享"),
            ("assistant", "提纲：限界上下文怎么划、聚合设计的三个坑、我们交易域的重构案例。"),
        ],
    ),
    # --- 数仓 ---
    (
        "数仓",
        "Hive 表生命周期",
        "给 ods 层 3000 多张表设置生命周期，超过 180 天的分区自动清理。",
        [
            ("user", "ods 层的表从来没清理过"),
            (
                "assistant",
                "3,214 张表里 1,870 张没设生命周期，按访问频率分三档：30 天、180 天、永久。",
            ),
        ],
    ),
    (
        "数仓",
        "实时大屏延迟",
        "运营大屏数据延迟 5 分钟，目标 30 秒内。",
        [
            ("user", "大屏上的成交额总是慢好几分钟"),
            (
                "assistant",
                "Flink 窗口是 5 分钟滚动窗口，改成 10 秒滑动 + 增量聚合，延迟可以降到 30 秒内。",
            ),
        ],
    ),
    (
        "数仓",
        "指标口径文档",
        "整理 80 个核心指标的口径说明，挂到数据门户。",
        [
            ("user", "大家对指标的理解都不一样，整理个文档"),
            ("assistant", "先整理 80 个核心指标，每个写清楚定义、计算 SQL、负责人和更新频率。"),
        ],
    ),
    (
        "数仓",
        "Flink checkpoint 失败",
        "实时任务 checkpoint 经常超时，状态后端改 RocksDB。",
        [
            ("user", "实时订单任务 checkpoint 老是超时"),
            (
                "assistant",
                "状态有 40GB 放在堆内存里，切到 RocksDB 增量 checkpoint，超时从 10 分钟降到 40 秒。",
            ),
        ],
    ),
    (
        "数仓",
        "ClickHouse 分区优化",
        "按天分区改为按月分区，减少小分区数量。",
        [
            ("user", "ClickHouse 查询越来越慢"),
            (
                "assistant",
                "events 表按天分区已经有 2,100 个分区，合并压力很大。改按月分区并加上 ORDER BY (app_id, ts)。",
            ),
        ],
    ),
    (
        "数仓",
        "数据质量监控",
        "为核心表配置行数波动和空值率监控。",
        [
            ("user", "昨天订单表少了一半数据都没人发现"),
            ("assistant", "给 20 张核心表加了行数环比 ±30% 和关键字段空值率告警，推送到飞书群。"),
        ],
    ),
    # --- 财务 ---
    (
        "财务",
        "差旅报销审核",
        "12 月差旅报销批量审核，重点查超标住宿。",
        [
            ("user", "12 月的差旅报销帮我过一遍"),
            ("assistant", "共 146 单，住宿超标 9 单，都在一线城市，超出标准 80-260 元不等。"),
        ],
    ),
    (
        "财务",
        "年度预算编制",
        "2027 年度部门预算编制，人力成本占 68%。",
        [
            ("user", "明年预算的框架先搭一下"),
            ("assistant", "按人力、办公、市场、IT 四大类，人力成本占 68%，先让各部门填需求表。"),
        ],
    ),
    (
        "财务",
        "固定资产盘点",
        "年末固定资产盘点，笔记本电脑账实不符 6 台。",
        [
            ("user", "年底资产盘点情况怎么样"),
            (
                "assistant",
                "已盘 412 件，账实不符 6 台笔记本，都是离职员工未归还的，已列清单给 HR。",
            ),
        ],
    ),
    (
        "财务",
        "个税汇算清缴",
        None,
        [
            ("user", "员工的个税汇算有什么要提醒的"),
            (
                "assistant",
                "3 月 1 日开始，年终奖单独计税还是并入综合所得要让员工自己选，我写了一份说明。",
            ),
        ],
    ),
    (
        "财务",
        "银行账户年检",
        "三个基本户和一般户的年检资料准备。",
        [
            ("user", "银行账户年检要准备什么"),
            (
                "assistant",
                "营业执照副本、法人身份证、公章财务章，还有预留印鉴卡，三家银行要分别预约。",
            ),
        ],
    ),
    (
        "财务",
        "供应商账期谈判",
        "把主要供应商账期从 30 天延到 60 天。",
        [
            ("user", "供应商账期能不能拉长"),
            ("assistant", "采购额前 10 的供应商里，有 6 家接受 60 天账期，条件是季度预付 10%。"),
        ],
    ),
    # --- 市场 ---
    (
        "市场",
        "品牌手册更新",
        "更新品牌手册：新 logo 使用规范和配色。",
        [
            ("user", "品牌手册还是两年前的"),
            ("assistant", "需要更新 logo 最小尺寸、安全距离、主辅色值，以及 PPT 模板，共 24 页。"),
        ],
    ),
    (
        "市场",
        "展会物料准备",
        "3 月上海工业展的展位物料：易拉宝、宣传册、礼品。",
        [
            ("user", "3 月的展会物料清单列一下"),
            (
                "assistant",
                "易拉宝 4 个、宣传册 2000 份、定制帆布袋 500 个，展位 36 平米需要 2 台显示器。",
            ),
        ],
    ),
    (
        "市场",
        "视频号内容规划",
        "视频号每周 3 条短视频，主题围绕客户案例。",
        [
            ("user", "视频号发什么内容"),
            (
                "assistant",
                "每周 3 条：客户案例 1 条、产品小技巧 1 条、团队日常 1 条，时长控制在 60 秒内。",
            ),
        ],
    ),
    (
        "市场",
        "KOL 合作名单",
        "筛选 20 位制造业垂类 KOL，评估报价和粉丝质量。",
        [
            ("user", "找一些制造业方向的博主合作"),
            ("assistant", "筛了 20 位，粉丝 5 万到 80 万，互动率最高的 3 位都是做工厂数字化的。"),
        ],
    ),
    (
        "市场",
        "官网案例页改版",
        None,
        [
            ("user", "官网客户案例页太单调"),
            ("assistant", "按行业分 Tab，每个案例加上量化结果和客户头像，首屏放 3 个标杆客户。"),
        ],
    ),
    # --- 销售 ---
    (
        "销售",
        "季度销售激励方案",
        "Q1 销售激励：超额部分提成比例阶梯上调。",
        [
            ("user", "Q1 的激励方案怎么定"),
            (
                "assistant",
                "完成率 100%-120% 部分提成 8%，120% 以上 12%，新客户首单额外奖励 2000 元。",
            ),
        ],
    ),
    (
        "销售",
        "渠道代理商培训",
        "给 15 家代理商做产品培训，分两场线上。",
        [
            ("user", "代理商培训安排一下"),
            (
                "assistant",
                "两场线上培训，每场 90 分钟：产品演示 40 分钟、报价规则 20 分钟、答疑 30 分钟。",
            ),
        ],
    ),
    (
        "销售",
        "大客户拜访计划",
        "1 月拜访 8 家重点客户，优先续约期在 Q1 的。",
        [
            ("user", "这个月要拜访哪些大客户"),
            ("assistant", "8 家，其中 5 家 Q1 到期续约，按城市排成两条线路，每条 3 天。"),
        ],
    ),
    (
        "销售",
        "销售周报模板",
        None,
        [
            ("user", "销售周报格式统一一下"),
            (
                "assistant",
                "模板四块：本周成交、重点商机进展、风险客户、下周计划，商机金额从 CRM 自动带出。",
            ),
        ],
    ),
    (
        "销售",
        "投标文件准备",
        "某市政项目投标：技术标 + 商务标，截止 2 月 8 日。",
        [
            ("user", "市政那个标的文件准备到哪了"),
            ("assistant", "技术标 80% 完成，缺 3 个类似项目的业绩证明；商务标等报价最终确认。"),
        ],
    ),
    # --- 法务 ---
    (
        "法务",
        "隐私政策修订",
        "按个人信息保护要求修订 App 隐私政策。",
        [
            ("user", "隐私政策需要更新吗"),
            ("assistant", "需要补充第三方 SDK 清单、个人信息出境说明和注销账号的处理时限。"),
        ],
    ),
    (
        "法务",
        "商标续展",
        "两个核心商标 4 月到期，提前办理续展。",
        [
            ("user", "商标什么时候到期"),
            (
                "assistant",
                "第 9 类和第 42 类 4 月 18 日到期，现在就可以提交续展，官费每类 500 元。",
            ),
        ],
    ),
    (
        "法务",
        "劳动合同模板更新",
        None,
        [
            ("user", "劳动合同模板要不要改"),
            ("assistant", "建议补充远程办公条款和竞业限制补偿标准，试用期条款也需要和新规对齐。"),
        ],
    ),
    # --- 行政 ---
    (
        "行政",
        "办公室搬迁",
        "3 月搬到新园区，协调装修、网络和搬家公司。",
        [
            ("user", "搬迁的时间线排一下"),
            (
                "assistant",
                "2 月 20 日装修验收，2 月 25 日网络开通，3 月 1 日周末搬家，3 月 3 日正式办公。",
            ),
        ],
    ),
    (
        "行政",
        "年会场地",
        "年会 300 人场地对比，预算 15 万。",
        [
            ("user", "年会场地有哪些选择"),
            ("assistant", "3 家酒店报价 11-16 万，第二家含舞台灯光和 LED 屏，性价比最高。"),
        ],
    ),
    (
        "行政",
        "访客系统上线",
        "前台访客登记改为扫码预约。",
        [
            ("user", "前台访客登记太麻烦"),
            ("assistant", "用小程序扫码预约，被访人确认后自动发门禁二维码，前台只需核对身份证。"),
        ],
    ),
    (
        "行政",
        "工位调整",
        None,
        [
            ("user", "研发扩了 12 个人，工位不够"),
            ("assistant", "把 3 楼会议室 B 改成开放工位可以放 10 个，再把储物间清出来放 4 个。"),
        ],
    ),
    # --- 生活 ---
    (
        "生活",
        "周末露营装备",
        "准备两天一夜的露营装备清单。",
        [
            ("user", "第一次去露营要带什么"),
            (
                "assistant",
                "帐篷、防潮垫、睡袋（舒适温度 5℃ 以下）、头灯、卡式炉，营地有电的话带个移动电源。",
            ),
        ],
    ),
    (
        "生活",
        "猫咪疫苗",
        "家里两只猫的年度疫苗和驱虫安排。",
        [
            ("user", "猫的疫苗该打了吧"),
            (
                "assistant",
                "妙三多每年一针，狂犬疫苗也是一年一次，两只猫可以同一天去，顺便做体内驱虫。",
            ),
        ],
    ),
    (
        "生活",
        "年夜饭菜单",
        "年夜饭 10 个人的菜单，8 热 4 凉。",
        [
            ("user", "帮我排个年夜饭菜单，10 个人"),
            (
                "assistant",
                "4 凉 8 热加一个汤：红烧鱼、白切鸡、梅菜扣肉、油焖大虾……半成品可以提前一天备好。",
            ),
        ],
    ),
    (
        "生活",
        "旧衣物捐赠",
        None,
        [
            ("user", "家里旧衣服太多了，捐到哪"),
            ("assistant", "小区有旧衣回收箱，八成新以上的可以通过公益小程序预约上门回收。"),
        ],
    ),
    (
        "生活",
        "阳台种菜",
        "在阳台用种植箱种小番茄和生菜。",
        [
            ("user", "阳台朝南，能种点什么菜"),
            ("assistant", "朝南光照足，小番茄、生菜、小葱都可以，种植箱深度至少 25cm。"),
        ],
    ),
    (
        "生活",
        "公积金提取",
        "用公积金提取支付房租，每季度一次。",
        [
            ("user", "公积金能用来付房租吗"),
            ("assistant", "可以，按季度在公积金 App 上申请，每月最多提取 1500 元，需要租赁备案。"),
        ],
    ),
    (
        "生活",
        "驾照换证",
        "驾照 2 月到期，办理到期换证。",
        [
            ("user", "驾照快到期了怎么换"),
            (
                "assistant",
                "在交管 12123 上先做体检信息上传，再申请期满换证，新证邮寄到家，约 5 个工作日。",
            ),
        ],
    ),
    (
        "生活",
        "洗碗机选购",
        "对比嵌入式和台式洗碗机，厨房柜位 60cm。",
        [
            ("user", "洗碗机买嵌入式的还是台式的"),
            ("assistant", "柜位有 60cm 的话建议 13 套嵌入式，带热风烘干，台式的容量太小。"),
        ],
    ),
    (
        "生活",
        "周末爬山路线",
        None,
        [
            ("user", "周末想去爬个山，别太累"),
            ("assistant", "推荐 8 公里环线，爬升 450 米，3 小时左右，山顶有补给点。"),
        ],
    ),
    # --- 学习 ---
    (
        "学习",
        "练字计划",
        "每天 15 分钟练行楷，3 个月一本字帖。",
        [
            ("user", "字太丑了想练练"),
            (
                "assistant",
                "从行楷入门，每天 15 分钟，先练 50 个常用字的笔画结构，一周拍照对比一次。",
            ),
        ],
    ),
    (
        "学习",
        "Python 数据分析课",
        "在线课程第 3 周：pandas 分组聚合。",
        [
            ("user", "pandas 的 groupby 还是不太懂"),
            (
                "assistant",
                "可以把 groupby 理解成拆分-应用-合并三步，我用你们课程的销售数据写了 5 个例子。",
            ),
        ],
    ),
    (
        "学习",
        "吉他入门",
        "每天 20 分钟练和弦转换。",
        [
            ("user", "C 和弦到 G 和弦总是换不过来"),
            (
                "assistant",
                "先慢速练两个和弦的来回切换，用节拍器 60bpm，每天 5 分钟，一周后提到 80。",
            ),
        ],
    ),
    (
        "学习",
        "PMP 备考",
        "3 月考 PMP，每周 10 小时。",
        [
            ("user", "PMP 还有两个月考，来得及吗"),
            (
                "assistant",
                "来得及。前 4 周过一遍教材和敏捷部分，后 4 周每周 2 套模拟题，错题按知识域整理。",
            ),
        ],
    ),
    # --- 理财 ---
    (
        "理财",
        "基金定投复盘",
        "复盘两年的指数基金定投，调整比例。",
        [
            ("user", "定投两年了，收益怎么样"),
            (
                "assistant",
                "总投入 9.6 万，当前市值 10.3 万，年化约 3.5%；宽基占比偏低，建议提到 60%。",
            ),
        ],
    ),
    (
        "理财",
        "房贷利率调整",
        "存量房贷利率下调后的月供变化。",
        [
            ("user", "房贷利率降了，月供少多少"),
            ("assistant", "贷款余额 128 万，利率从 4.2% 降到 3.55%，每月少还约 480 元。"),
        ],
    ),
    (
        "理财",
        "家庭记账",
        None,
        [
            ("user", "上个月家里钱花哪了"),
            ("assistant", "餐饮 31%、房贷 28%、孩子 17%，外卖支出比上月多了 600 元。"),
        ],
    ),
    (
        "理财",
        "养老金账户",
        "个人养老金账户每年存 12000 元的抵税测算。",
        [
            ("user", "个人养老金值得开吗"),
            (
                "assistant",
                "按你的边际税率 20%，每年存 12000 可以少交 2400 元税，领取时按 3% 缴税。",
            ),
        ],
    ),
    # --- 孩子 ---
    (
        "孩子",
        "寒假作息表",
        "寒假每天的学习、运动和屏幕时间安排。",
        [
            ("user", "寒假给孩子做个作息表"),
            ("assistant", "上午 9-11 点作业和阅读，下午户外 1 小时，屏幕时间每天不超过 40 分钟。"),
        ],
    ),
    (
        "孩子",
        "钢琴考级",
        "7 月钢琴四级考试的练习计划。",
        [
            ("user", "钢琴四级要练哪些曲子"),
            (
                "assistant",
                "四级要求练习曲、乐曲各一首加音阶琶音，建议先把车尔尼 599 的第 78 条练熟。",
            ),
        ],
    ),
    (
        "孩子",
        "近视防控",
        None,
        [
            ("user", "孩子视力从 5.0 掉到 4.8 了"),
            ("assistant", "建议去医院做散瞳验光，确认是真性近视还是假性；每天户外 2 小时最有效。"),
        ],
    ),
    (
        "孩子",
        "过敏原检测",
        "孩子反复咳嗽，安排过敏原检测。",
        [
            ("user", "孩子一到晚上就咳嗽"),
            ("assistant", "可能是尘螨过敏，建议去儿童医院做血清过敏原检测，同时换防螨床品。"),
        ],
    ),
    (
        "孩子",
        "数学思维课",
        "对比两家数学思维课，周日下午试听。",
        [
            ("user", "孩子数学思维课报哪家"),
            (
                "assistant",
                "两家都约了周日下午试听，一家偏游戏化，一家偏奥数，看孩子试听后的兴趣再定。",
            ),
        ],
    ),
    (
        "孩子",
        "儿童牙齿涂氟",
        None,
        [
            ("user", "孩子要不要去涂氟"),
            ("assistant", "3 岁以上建议每半年涂一次，社区医院免费，带上预防接种证去登记。"),
        ],
    ),
    (
        "理财",
        "信用卡积分兑换",
        "三张信用卡积分年底清零前兑换。",
        [
            ("user", "信用卡积分快过期了"),
            ("assistant", "三张卡合计 8.6 万积分，换航空里程最划算，约等于一张国内单程机票。"),
        ],
    ),
    (
        "学习",
        "播客剪辑入门",
        "学习用剪辑软件做一期 30 分钟的播客。",
        [
            ("user", "想自己剪一期播客"),
            ("assistant", "先把两条音轨对齐，降噪后删掉长停顿，最后统一响度到 -16 LUFS。"),
        ],
    ),
    (
        "生活",
        "搬家打包清单",
        None,
        [
            ("user", "下个月搬家，怎么打包不乱"),
            (
                "assistant",
                "按房间编号装箱，每箱贴内容清单，易碎品单独装，搬家前一周先打包不常用的。",
            ),
        ],
    ),
    # --- English: backend ---
    (
        "backend",
        "Pagination cursor rework",
        "Switch list endpoints from offset to cursor pagination.",
        [
            ("user", "Deep pages on /contacts take seconds."),
            (
                "assistant",
                "OFFSET 50000 scans and discards rows. An opaque cursor on (created_at, id) keeps every page under 20ms.",
            ),
        ],
    ),
    (
        "backend",
        "Idempotency keys for payouts",
        "Add Idempotency-Key support to the payouts API.",
        [
            ("user", "A partner double-submitted a payout on retry."),
            (
                "assistant",
                "Store the Idempotency-Key with the response for 24h; a replay returns the stored response instead of creating a second payout.",
            ),
        ],
    ),
    (
        "backend",
        "Move jobs queue to SQS FIFO",
        "Replace the Redis-backed job queue with SQS FIFO.",
        [
            ("user", "We lost jobs again when Redis restarted."),
            (
                "assistant",
                "SQS FIFO gives durability and per-group ordering; message groups by account_id keep per-account order.",
            ),
        ],
    ),
    (
        "backend",
        "Protobuf schema linting",
        "Add buf lint and breaking-change checks to CI.",
        [
            ("user", "Someone renamed a proto field and broke the mobile client."),
            (
                "assistant",
                "buf breaking against main would have caught it. I added buf lint + buf breaking as a required check.",
            ),
        ],
    ),
    (
        "backend",
        "Search relevance tuning",
        None,
        [
            ("user", "Searching 'acme' ranks old archived deals first."),
            (
                "assistant",
                "Adding a recency decay and a penalty for archived records fixes the top 10 for 18 of 20 test queries.",
            ),
        ],
    ),
    (
        "backend",
        "Email bounce handling",
        "Process SES bounce and complaint notifications.",
        [
            ("user", "Our sender reputation dropped."),
            (
                "assistant",
                "We keep emailing hard-bounced addresses. Subscribing to SES bounce notifications and suppressing them should fix it.",
            ),
        ],
    ),
    (
        "backend",
        "Audit log export",
        "Let admins export audit logs as CSV for the last 90 days.",
        [
            ("user", "Enterprise customers want to export audit logs."),
            (
                "assistant",
                "Async export job writing CSV to S3 with a signed link valid for 24h; 90-day range max.",
            ),
        ],
    ),
    # --- English: frontend ---
    (
        "frontend",
        "Bundle size budget",
        "Keep the main JS bundle under 250KB gzipped.",
        [
            ("user", "The main bundle crept up to 410KB."),
            (
                "assistant",
                "moment with all locales is 70KB and the icon set is imported whole. Switching to date-fns and per-icon imports saves ~130KB.",
            ),
        ],
    ),
    (
        "frontend",
        "Accessibility audit",
        "Fix WCAG AA issues found by axe on checkout.",
        [
            ("user", "Run an accessibility pass on checkout."),
            (
                "assistant",
                "axe found 14 issues: missing labels on 5 inputs, low contrast on the promo banner, and a focus trap in the address modal.",
            ),
        ],
    ),
    (
        "frontend",
        "Migrate build to Vite",
        "Move the web app build from webpack to Vite.",
        [
            ("user", "Dev server takes 40s to start."),
            (
                "assistant",
                "A Vite spike starts in 1.8s. Blockers: two webpack-specific require.context calls and the SVG loader.",
            ),
        ],
    ),
    (
        "frontend",
        "Chart library evaluation",
        None,
        [
            ("user", "Which chart library should replace the old one?"),
            (
                "assistant",
                "Compared Recharts, ECharts and visx: ECharts handles 100k points best, Recharts is the simplest API.",
            ),
        ],
    ),
    (
        "frontend",
        "Form validation with zod",
        "Replace ad-hoc form validation with zod schemas shared with the API.",
        [
            ("user", "Validation rules differ between the form and the API."),
            (
                "assistant",
                "Put the zod schemas in the shared package and use them in both the form resolver and the request handler.",
            ),
        ],
    ),
    (
        "frontend",
        "Dark theme tokens",
        "Add dark theme values to the design tokens.",
        [
            ("user", "Customers keep asking for a dark theme."),
            (
                "assistant",
                "92 color tokens need a dark value; 60 can be derived automatically, 32 need a designer's pick.",
            ),
        ],
    ),
    # --- English: devops ---
    (
        "devops",
        "Helm chart consolidation",
        "Merge 14 near-identical service charts into one library chart.",
        [
            ("user", "Every service has its own copy-pasted chart."),
            (
                "assistant",
                "A shared library chart covers 12 of the 14; the two workers need extra sidecar values.",
            ),
        ],
    ),
    (
        "devops",
        "GitHub Actions runner costs",
        "Cut Actions minutes by caching and self-hosted runners.",
        [
            ("user", "Our Actions bill doubled."),
            (
                "assistant",
                "Docker layer caching is off and the matrix runs 4 Node versions on every push. Limiting the matrix to main saves ~45%.",
            ),
        ],
    ),
    (
        "devops",
        "Secrets rotation schedule",
        "Quarterly rotation for database and third-party API secrets.",
        [
            ("user", "When did we last rotate the DB passwords?"),
            (
                "assistant",
                "8 months ago. Proposing a quarterly rotation via the secrets operator, staged one environment at a time.",
            ),
        ],
    ),
    (
        "devops",
        "Prometheus remote write",
        None,
        [
            ("user", "Prometheus keeps running out of disk."),
            (
                "assistant",
                "Keep 7 days locally and remote-write to Mimir for long-term storage; drop the 3 highest-cardinality metrics first.",
            ),
        ],
    ),
    (
        "devops",
        "Disaster recovery runbook",
        "Write the DR runbook for a full region loss.",
        [
            ("user", "We don't have a DR runbook."),
            (
                "assistant",
                "Draft covers DNS failover, promoting the replica in the second region, and restoring object storage from cross-region copies.",
            ),
        ],
    ),
    (
        "devops",
        "Argo CD rollout",
        "Move deployments from scripts to Argo CD.",
        [
            ("user", "Deploys are still bash scripts."),
            (
                "assistant",
                "One Argo CD Application per service, app-of-apps per environment; staging first, prod after two weeks.",
            ),
        ],
    ),
    # --- English: ml ---
    (
        "ml",
        "Embedding model eval",
        "Compare embedding models for the help-center search.",
        [
            ("user", "Is the new embedding model better for help-center search?"),
            (
                "assistant",
                "On 300 labeled queries recall@5 went from 0.71 to 0.79; latency is 2x, still under 40ms.",
            ),
        ],
    ),
    (
        "ml",
        "Label quality review",
        "Audit the intent-classification labels; suspected 8% noise.",
        [
            ("user", "The intent classifier plateaued."),
            (
                "assistant",
                "Sampled 500 labels: 41 are wrong, mostly 'billing' vs 'refund'. Relabeling those two classes first.",
            ),
        ],
    ),
    (
        "ml",
        "GPU quota request",
        None,
        [
            ("user", "We need more GPUs for fine-tuning."),
            (
                "assistant",
                "Drafted the quota request for 8 more A100s in us-east-1 with the utilization numbers from last month.",
            ),
        ],
    ),
    (
        "ml",
        "Feature store backfill",
        "Backfill 12 months of features into the feature store.",
        [
            ("user", "The new features only have 2 weeks of history."),
            (
                "assistant",
                "Backfill as a daily-partitioned batch job; 12 months takes about 6 hours on the current cluster.",
            ),
        ],
    ),
    # --- English: support / people / home / accounting / product ---
    (
        "support",
        "Zendesk macro cleanup",
        "Merge and retire outdated Zendesk macros.",
        [
            ("user", "We have 230 macros and half are outdated."),
            (
                "assistant",
                "88 weren't used in 6 months; 27 are duplicates. Proposed list to retire is ready for the team leads.",
            ),
        ],
    ),
    (
        "support",
        "CSAT survey redesign",
        "Shorter CSAT survey to lift the response rate.",
        [
            ("user", "Only 9% of customers answer the CSAT survey."),
            (
                "assistant",
                "Cut it to one rating plus an optional comment and send it 1 hour after resolution instead of 24.",
            ),
        ],
    ),
    (
        "support",
        "Enterprise SLA report",
        "Monthly first-response and resolution SLA report for enterprise accounts.",
        [
            ("user", "Build the monthly SLA report for enterprise accounts."),
            (
                "assistant",
                "First response met 96.2%, resolution 91.4%. Two breaches came from weekend tickets.",
            ),
        ],
    ),
    (
        "people",
        "Performance review calendar",
        "Timeline for the H1 performance review cycle.",
        [
            ("user", "Lay out the review cycle timeline."),
            (
                "assistant",
                "Self reviews due Mar 6, peer feedback Mar 13, calibration the week of Mar 20, conversations by Apr 3.",
            ),
        ],
    ),
    (
        "people",
        "Team offsite venue",
        None,
        [
            ("user", "Find a venue for a 25-person team offsite."),
            (
                "assistant",
                "Three options within 2 hours' drive; the lake lodge has a meeting room and fits the budget.",
            ),
        ],
    ),
    (
        "home",
        "Dentist appointment",
        None,
        [
            ("user", "Book a cleaning for me and the kids."),
            ("assistant", "The clinic has back-to-back slots on Feb 14 at 3:30 and 4:00 pm."),
        ],
    ),
    (
        "home",
        "Garden irrigation timer",
        "Set up the drip irrigation timer for spring.",
        [
            ("user", "Program the drip timer for the vegetable beds."),
            (
                "assistant",
                "Zone 1 (beds) 20 minutes at 6 am every other day, zone 2 (shrubs) 15 minutes twice a week.",
            ),
        ],
    ),
    (
        "home",
        "Kids' summer camp",
        "Compare summer camps; registration opens in March.",
        [
            ("user", "Which summer camps are worth it?"),
            (
                "assistant",
                "The science camp and the sailing camp both fit the dates; early-bird pricing ends March 15.",
            ),
        ],
    ),
    (
        "home",
        "Mortgage refinance",
        "Check whether refinancing at current rates pays off.",
        [
            ("user", "Is it worth refinancing now?"),
            (
                "assistant",
                "At a 0.75 point lower rate, closing costs of $4,200 break even after 19 months.",
            ),
        ],
    ),
    (
        "accounting",
        "Quarter-end accruals",
        "Prepare Q4 accruals for contractors and cloud usage.",
        [
            ("user", "What do we need to accrue for Q4?"),
            (
                "assistant",
                "Contractor invoices not yet received ($38k) and December cloud usage ($61k). Journal entries drafted.",
            ),
        ],
    ),
    (
        "accounting",
        "Expense policy update",
        "Update the expense policy for meals and home-office stipends.",
        [
            ("user", "The expense policy is outdated."),
            (
                "assistant",
                "Proposed: meals up to $60/day when traveling, a $500 one-time home-office stipend, receipts over $75.",
            ),
        ],
    ),
    (
        "product",
        "Pricing page experiment",
        "Test showing annual prices by default on the pricing page.",
        [
            ("user", "Set up the annual-by-default pricing experiment."),
            (
                "assistant",
                "50/50 split on new visitors, primary metric paid conversion within 14 days, 3 weeks to reach significance.",
            ),
        ],
    ),
    (
        "product",
        "Customer advisory board",
        None,
        [
            ("user", "Plan the next customer advisory board meeting."),
            (
                "assistant",
                "8 customers confirmed; agenda: roadmap preview, pricing feedback, and a workflow teardown session.",
            ),
        ],
    ),
]


# --------------------------------------------------------------------------------------
# Log generators (seeded)
# --------------------------------------------------------------------------------------


def spring_batch_log(rng: random.Random, buried: str, at_line: int, n: int, file: str) -> list[str]:
    lines = []
    sec = 2 * 3600 + 10 * 60
    commit = 0
    for i in range(n):
        sec += rng.randint(1, 3)
        ts = f"{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}.{rng.randint(100, 999)}"
        if i == at_line:
            lines.append(f"{ts} ERROR [recon-job] o.s.batch.core.step.AbstractStep : {buried}")
            continue
        kind = rng.random()
        if kind < 0.7:
            commit += 1
            lines.append(
                f"{ts} INFO  [recon-job] o.s.b.c.s.item.ChunkOrientedTasklet : chunk committed "
                f"(file={file}, read=500, written=500, skipped=0, commitCount={commit})"
            )
        elif kind < 0.9:
            lines.append(
                f"{ts} DEBUG [recon-job] c.m.recon.ReconItemProcessor : matched 500/500 records against ledger"
            )
        else:
            lines.append(
                f"{ts} INFO  [recon-job] c.m.recon.ReconListener : heap used {rng.randint(610, 980)}MB, gc pauses ok"
            )
    return lines


def playwright_log(rng: random.Random, buried: str, at_line: int, n: int) -> list[str]:
    specs = [
        "auth/login.spec.ts",
        "contacts/list.spec.ts",
        "contacts/import.spec.ts",
        "settings/profile.spec.ts",
        "reports/export.spec.ts",
        "billing/plans.spec.ts",
    ]
    lines = []
    for i in range(n):
        if i == at_line:
            lines.append(buried)
            continue
        spec = rng.choice(specs)
        line_no = rng.randint(10, 160)
        kind = rng.random()
        if kind < 0.75:
            lines.append(
                f"  ✓  {i + 1} [chromium] › {spec}:{line_no}:5 › renders list ({rng.uniform(0.8, 6.5):.1f}s)"
            )
        elif kind < 0.9:
            lines.append(
                f"  ↻  {i + 1} [chromium] › {spec}:{line_no}:5 › retry #1 after flaky network idle wait"
            )
        else:
            lines.append(
                f"  -  {i + 1} [webkit] › {spec}:{line_no}:5 › skipped (webkit not enabled)"
            )
    return lines


def airflow_retry_log(rng: random.Random, buried: str, at_line: int, n: int) -> list[str]:
    lines = []
    sec = 9 * 3600
    for i in range(n):
        sec += rng.randint(20, 90)
        ts = f"[2027-01-20, {sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d} UTC]"
        if i == at_line:
            lines.append(f"{ts} {{taskinstance.py:2905}} ERROR - {buried}")
            continue
        month = 1 + (i // 9) % 12
        day = 1 + i % 28
        kind = rng.random()
        if kind < 0.5:
            lines.append(
                f"{ts} {{taskinstance.py:1206}} INFO - Marking task as UP_FOR_RETRY. dag_id=dwd_order_wide_backfill, "
                f"task_id=load_partition, run_id=backfill__2024-{month:02d}-{day:02d}T00:00:00+00:00"
            )
        elif kind < 0.8:
            lines.append(
                f"{ts} {{standard_task_runner.py:104}} INFO - Running <TaskInstance: dwd_order_wide_backfill.load_partition "
                f"backfill__2024-{month:02d}-{day:02d}T00:00:00+00:00 [running]> on host worker-{rng.randint(1, 6)}"
            )
        else:
            lines.append(
                f"{ts} {{local_task_job_runner.py:234}} INFO - Task exited with return code 1 (attempt {rng.randint(1, 3)}/3)"
            )
    return lines


def filebeat_log(rng: random.Random, buried: str, at_line: int, n: int) -> list[str]:
    lines = []
    sec = 18 * 3600 + 40 * 60
    acked = 0
    for i in range(n):
        sec += 30
        ts = f"2027-01-07T{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}.{rng.randint(100, 999)}+0800"
        if i == at_line:
            lines.append(f"{ts} ERROR [logrotate] {buried}")
            continue
        acked += rng.randint(900, 2400)
        if rng.random() < 0.8:
            lines.append(
                f"{ts} INFO [monitoring] log/log.go:187 Non-zero metrics in the last 30s "
                f'{{"harvester":{{"open_files":{rng.randint(9, 14)}}},"output":{{"events":{{"acked":{acked}}}}}}}'
            )
        else:
            lines.append(
                f"{ts} WARN [diskwatch] /data/logs usage {min(97, 91 + i // 20)}% on app-07"
            )
    return lines


def gc_log(rng: random.Random, buried: str, at_line: int, n: int) -> list[str]:
    lines = []
    sec = 14 * 3600 + 5 * 60
    heap = 1700
    for i in range(n):
        sec += rng.randint(3, 11)
        ts = f"[2027-01-06T{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}.{rng.randint(100, 999)}+0800]"
        gc_id = 3100 + i
        if i == at_line:
            lines.append(f"{ts}[error][gc] GC({gc_id}) {buried}")
            continue
        before = heap + rng.randint(80, 300)
        after = heap + rng.randint(-40, 40)
        if rng.random() < 0.8:
            lines.append(
                f"{ts}[info][gc] GC({gc_id}) Pause Young (Allocation Failure) {before}M->{after}M(2048M) "
                f"{rng.uniform(20, 140):.3f}ms"
            )
        else:
            lines.append(
                f"{ts}[info][gc] GC({gc_id}) Pause Full (Ergonomics) {before}M->{after - 90}M(2048M) "
                f"{rng.uniform(900, 2600):.3f}ms"
            )
    return lines


def crm_import_log(rng: random.Random, buried: str, at_line: int, n: int) -> list[str]:
    lines = []
    sources = ["官网表单", "上海工博会", "深圳电子展", "线上直播", "渠道推荐"]
    for i in range(n):
        if i == at_line:
            lines.append(buried)
            continue
        start = 1 + i * 50
        kind = rng.random()
        if kind < 0.8:
            lines.append(
                f"[crm-import] batch {i + 1:03d}: rows {start}-{start + 49} imported "
                f"(来源: {rng.choice(sources)}, 新建 {rng.randint(30, 50)}, 合并 {rng.randint(0, 20)})"
            )
        else:
            lines.append(
                f"[crm-import] batch {i + 1:03d}: rows {start}-{start + 49} imported, 行业字段自动补全 {rng.randint(5, 40)} 条"
            )
    return lines


# --------------------------------------------------------------------------------------
# Snapshot 1: backend team lead (Chinese, Feishu), Tuesday late morning.
# Several "...接口报错" tasks, a task named 新建用户接口报错, JIRA tickets, two identical
# batch-job failures whose only difference is buried in long logs.
# --------------------------------------------------------------------------------------


def snapshot_backend(rng: random.Random):
    sid = "backend-lead-2027-01-12"
    now = datetime.fromisoformat("2027-01-12T11:40:00+08:00")
    batch_summary = "每日对账批处理 recon-job 失败，正在看完整日志。"
    specs = [
        Spec(
            "newuser_api",
            "新建用户接口报错",
            "研发",
            ago(h=1, m=40),
            state="waiting_for_user",
            summary="POST /api/v2/users 偶发 500：手机号唯一索引 uk_mobile 冲突时没有返回 409。",
            messages=[
                ("user", "新建用户的接口今天早上报了一堆 500，帮我看下"),
                (
                    "tool",
                    "2027-01-12 09:12:44.207 ERROR [user-svc] c.m.user.api.UserController : POST /api/v2/users failed\n"
                    "org.springframework.dao.DuplicateKeyException: Duplicate entry '1380000xxxx' for key 'uk_mobile'",
                ),
                (
                    "assistant",
                    "是手机号唯一索引 uk_mobile 冲突，service 层没有捕获 DuplicateKeyException，直接变成了 500。应该返回 409 并提示“手机号已注册”。",
                ),
                ("user", "先改成 409，前端提示我去跟他们说"),
                ("assistant", "好的，改动在 UserService.create 里，单测已补，等你确认后提 MR。"),
            ],
        ),
        Spec(
            "order_api",
            "订单接口报错",
            "研发",
            ago(h=3),
            summary="订单列表接口 /api/v2/orders 传超大 page_size 时报 500。",
            messages=[
                ("user", "订单接口又报错了，page_size 传 10000 直接 500"),
                (
                    "assistant",
                    "没有校验 page_size 上限，SQL 一次拉全量导致超时。建议上限 200，超出返回 400，并在 OpenAPI 文档里写明。",
                ),
                ("user", "上限定 100 吧"),
            ],
        ),
        Spec(
            "login_timeout",
            "登录接口超时",
            "研发",
            ago(d=1, h=2),
            summary="登录接口 p99 从 300ms 升到 2.4s，瓶颈在短信验证码服务的同步校验。",
            messages=[
                ("user", "登录接口最近好慢，用户都在投诉"),
                (
                    "assistant",
                    "链路追踪看，80% 的时间耗在同步调用短信验证码服务，对方 p99 有 2s。建议加 500ms 超时，验证码校验结果本地缓存 5 分钟。",
                ),
            ],
        ),
        Spec(
            "ws_push",
            "WebSocket 推送断连",
            "研发",
            ago(m=25),
            state="running",
            summary="排查 App 内 WebSocket 推送断连，怀疑 Nginx proxy_read_timeout 小于心跳间隔。",
            messages=[
                ("user", "App 里的消息推送老是断，帮我查查"),
                (
                    "assistant",
                    "Nginx 的 proxy_read_timeout 是 60s，客户端心跳 90s 一次，空闲连接会被 Nginx 断开。建议心跳改成 30s。",
                ),
                ("user", "心跳已经改成 30s 了，但今天早上还是有人断", 172800),
                (
                    "tool",
                    "ws-gateway-2 stderr:\nError: write ERR_CONN_RESET\n"
                    "    at afterWriteDispatched (node:internal/stream_base_commons:160:15)\n"
                    "    at PushConnection.flush (src/server/ws.ts:214:18)\n"
                    "connection 7f3a closed, bufferedAmount=16777216",
                ),
                (
                    "assistant",
                    "这次不是超时：src/server/ws.ts 第 214 行 flush 之前没有检查 bufferedAmount，弱网客户端积压到 16MB 后连接被重置。需要加背压：超过 1MB 就暂停推送、合并消息。",
                ),
                ("user", "行，先按这个思路改"),
            ],
        ),
        Spec(
            "jira_4411",
            "支付回调重复入账",
            "研发",
            ago(h=5),
            summary="支付宝异步通知重复回调，导致 2 笔订单重复入账，需要做幂等。",
            messages=[
                ("user", "JIRA-4411 这个单子你看下，有两笔订单重复入账了"),
                (
                    "assistant",
                    "notify_url 没有及时返回 success 时支付宝会重发通知，我们每次都入账。按 out_trade_no + trade_status 做幂等，入账前先查流水表。",
                ),
                ("user", "幂等加上，顺便把那两笔冲掉"),
            ],
        ),
        Spec(
            "jira_4417",
            "退款回调验签失败",
            "研发",
            ago(d=2),
            state="waiting_for_user",
            summary="微信退款结果通知验签失败，APIv3 平台证书没有更新。",
            messages=[
                ("user", "JIRA-4417：微信退款通知一直验签失败"),
                (
                    "assistant",
                    "微信支付平台证书 1 月 1 日轮换了，我们还在用旧的序列号验签。改成定时自动下载平台证书就行。",
                ),
            ],
        ),
        Spec(
            "batch_alipay",
            "对账批处理失败",
            "研发",
            ago(m=50),
            state="running",
            summary=batch_summary,
            messages=[
                ("user", "昨晚的对账批处理又失败了，日志贴给你"),
                *chunk(
                    spring_batch_log(
                        rng,
                        "FlatFileParseException: Parsing error at line: 48213 in resource=[file:/data/recon/alipay_20270111.csv], "
                        'input=[2027011122001456,TRADE_SUCCESS,88.00,"备注,含逗号"]',
                        131,
                        160,
                        "alipay_20270111.csv",
                    ),
                    10,
                    2,
                ),
                ("assistant", "大部分是正常的 chunk 提交记录，我还在往后翻。", 60),
            ],
        ),
        Spec(
            "batch_wechat",
            "对账批处理失败 (2)",
            "研发",
            ago(d=1, h=4),
            state="waiting_for_user",
            summary=batch_summary,
            messages=[
                ("user", "对账批处理又挂了，这次是微信的文件"),
                *chunk(
                    spring_batch_log(
                        rng,
                        'NumberFormatException: For input string: "1,280.00" (field=settle_amount, file=wxpay_20270110.csv)',
                        88,
                        150,
                        "wxpay_20270110.csv",
                    ),
                    10,
                    2,
                ),
                ("assistant", "日志很长，前面都是正常的 chunk，我先存下来。", 60),
            ],
        ),
        Spec(
            "ratelimit",
            "网关限流改造",
            "研发",
            ago(d=6),
            archived=True,
            summary="网关按租户限流：令牌桶 + Redis Lua 脚本。",
            messages=[
                ("user", "网关要按租户限流"),
                ("assistant", "令牌桶放在 Redis，用 Lua 脚本保证原子性，超限返回 429。"),
            ],
        ),
        Spec(
            "duty",
            "闲聊：春节值班怎么排",
            "研发",
            ago(d=1),
            labels=[SIDE_LABEL],
            messages=[
                ("user", "春节值班大家都不想排，怎么排比较公平"),
                ("assistant", "按去年值班天数倒序先选，除夕和初一两天给双倍调休。"),
            ],
        ),
        Spec(
            "coord",
            "协调：Q1 技术债清理",
            "研发",
            ago(h=3, m=30),
            role="coordination",
            messages=[("assistant", "已派发子任务：扫描所有 Maven 依赖的许可证。")],
        ),
        Spec(
            "license",
            "扫描依赖许可证",
            "研发",
            ago(h=2),
            parent="coord",
            state="running",
            summary="扫描 214 个 Maven 依赖，发现 3 个 GPL 许可证需要替换。",
            messages=[("assistant", "已扫描 214 个依赖：3 个 GPL-3.0，11 个未声明许可证。")],
        ),
    ]
    cases = [
        Case(
            "新建用户接口报错那个问题怎么样了",
            "existing",
            ["name_contains_new", "similar_names"],
            "unique",
            target="newuser_api",
            keys=("新建用户接口",),
            layer="name",
        ),
        Case(
            "新建用户那个接口，409 改好了没？",
            "existing",
            ["name_contains_new", "partial_name"],
            "unique",
            target="newuser_api",
            keys=("409",),
            layer="summary",
        ),
        Case(
            "DuplicateKeyException 那个异常现在捕获了吗",
            "existing",
            ["identifiers", "mixed_zh_en"],
            "unique",
            target="newuser_api",
            keys=("DuplicateKeyException",),
            layer="evidence",
        ),
        Case(
            "订单接口 page_size 的上限加上了吗",
            "existing",
            ["similar_names", "identifiers", "mixed_zh_en"],
            "unique",
            target="order_api",
            keys=("page_size",),
            layer="summary",
        ),
        Case(
            "接口报错",
            "clarify",
            ["short_ambiguous", "similar_names"],
            "ambiguous",
            keys=("接口报错",),
        ),
        Case("继续", "clarify", ["bare_continuation", "reference_only"], "ref_unclear"),
        Case(
            "把登录接口超时那个再跟一下吧",
            "existing",
            ["filler_words", "similar_names"],
            "unique",
            target="login_timeout",
            keys=("登录接口",),
            layer="name",
        ),
        Case(
            "帮我看下 src/server/ws.ts 214 行那个 bufferedAmount 的问题",
            "existing",
            ["identifiers", "stale_summary", "mixed_zh_en"],
            "unique",
            target="ws_push",
            keys=("bufferedAmount",),
            layer="evidence",
        ),
        Case(
            "推送断连那个，背压控制加上了没有？",
            "existing",
            ["partial_name", "stale_summary"],
            "unique",
            target="ws_push",
            keys=("推送断连",),
            layer="name",
        ),
        Case(
            "ERR_CONN_RESET 是不是就是 16MB 积压导致的？",
            "existing",
            ["identifiers", "stale_summary", "mixed_zh_en"],
            "unique",
            target="ws_push",
            keys=("ERR_CONN_RESET",),
            layer="evidence",
        ),
        Case(
            "JIRA-4411 修完了吗？",
            "existing",
            ["identifiers"],
            "unique",
            target="jira_4411",
            keys=("JIRA-4411",),
            layer="evidence",
        ),
        Case(
            "4417 那个退款验签的单子再看一下",
            "existing",
            ["identifiers", "partial_name"],
            "unique",
            target="jira_4417",
            keys=("4417",),
            layer="evidence",
        ),
        Case(
            "alipay_20270111.csv 第 48213 行解析失败，是不是备注里多了个逗号",
            "existing",
            ["repetitive_logs", "identifiers", "similar_names", "mixed_zh_en"],
            "unique",
            target="batch_alipay",
            keys=("48213",),
            layer="evidence",
        ),
        Case(
            "把 1,280.00 这种带千分位的金额转数字那个问题处理一下吧",
            "existing",
            ["repetitive_logs", "similar_names", "filler_words"],
            "unique",
            target="batch_wechat",
            keys=("1,280.00",),
            layer="evidence",
        ),
        Case(
            "对账批处理又挂了，接着看",
            "clarify",
            ["similar_names", "repetitive_logs"],
            "ambiguous",
            keys=("对账批处理",),
        ),
        Case(
            "网关限流那个方案接着做吧",
            "clarify",
            ["ineligible", "filler_words"],
            "ineligible",
            keys=("限流",),
        ),
        Case("春节值班表排好了没", "clarify", ["ineligible"], "ineligible", keys=("值班",)),
        Case("依赖许可证扫描扫完了吗", "clarify", ["ineligible"], "ineligible", keys=("许可证",)),
        Case(
            "新建一个任务：调研一下 MySQL 升到 8.4 LTS 的风险",
            "new",
            ["explicit_new", "mixed_zh_en"],
            "none",
            keys=("8.4 LTS",),
        ),
        Case(
            "另开一个新任务，专门跟进新建用户接口 409 的前端提示",
            "new",
            ["explicit_new", "name_contains_new"],
            "new_overlap",
            keys=("新建用户接口",),
        ),
        Case(
            "帮我查查明天北京飞杭州的航班",
            "clarify",
            ["no_match"],
            "none",
            keys=("航班", "杭州"),
        ),
    ]
    fill = dict(
        n_today=4,
        n_week=8,
        n_old=14,
        today_min=ago(h=1),
        old_range=(ago(d=20), ago(d=80)),
        workspaces={"研发", "数仓", "财务", "行政", "生活"},
    )
    return sid, now, specs, cases, fill


# --------------------------------------------------------------------------------------
# Snapshot 2: a parent's personal assistant (Chinese), Saturday morning. One task was
# touched 18 minutes ago; everything else is from last night or older, so bare
# continuations have a clear referent here.
# --------------------------------------------------------------------------------------


def snapshot_family(rng: random.Random):
    sid = "family-weekend-2027-01-16"
    now = datetime.fromisoformat("2027-01-16T10:20:00+08:00")
    specs = [
        Spec(
            "tickets",
            "春节回家车票",
            "生活",
            ago(m=18),
            state="waiting_for_user",
            summary="抢 2 月 5 日北京到长沙的高铁票，候补已提交。",
            messages=[
                ("user", "帮我盯一下 2 月 5 号北京去长沙的票，两个大人一个小孩"),
                (
                    "assistant",
                    "G83 二等座已提交候补，兑现概率大约 62%；备选 G501 一等座目前还有 7 张。",
                ),
                ("user", "候补先等着，今晚还没兑现就直接买 G501"),
                ("assistant", "好的，今晚 20:00 我再查一次候补状态并提醒你。"),
            ],
            pace=120,
        ),
        Spec(
            "newyear_gift",
            "新年礼物清单",
            "生活",
            ago(d=1, h=3),
            summary="给双方父母和孩子准备新年礼物，总预算 3000 元。",
            messages=[
                ("user", "帮我列个新年礼物清单，两边父母加孩子，预算 3000"),
                (
                    "assistant",
                    "爸妈：按摩靠垫 + 羊毛围巾；公婆：电饭煲 + 茶叶；孩子：乐高和绘本。合计约 2760 元。",
                ),
                ("user", "茶叶换成坚果礼盒"),
            ],
        ),
        Spec(
            "newcar_ins",
            "新车保险",
            "理财",
            ago(d=3),
            state="waiting_for_user",
            summary="新车交强险 + 商业险比价，三家报价待对比。",
            messages=[
                ("user", "新车下周提，保险怎么买划算"),
                (
                    "assistant",
                    "三家报价：A 公司 5180、B 公司 4920、C 公司 5350，差别主要在三者险保额 200 万还是 300 万。建议选 B 家 300 万三者。",
                ),
            ],
        ),
        Spec(
            "reno",
            "厨房装修",
            "生活",
            ago(h=13),
            summary="厨房装修选瓷砖：在哑光灰和水磨石之间选。",
            messages=[
                ("user", "厨房瓷砖纠结哑光灰还是水磨石"),
                (
                    "assistant",
                    "厨房油烟多，哑光灰更耐脏，水磨石好看但缝多难打理。推荐哑光灰 600x1200。",
                ),
                ("user", "瓷砖定了哑光灰。现在的问题是燃气热水器装哪", 432000),
                (
                    "assistant",
                    "烟道只能走北墙，热水器要装在阳台一侧，离燃气表 1.2 米。需要燃气公司上门改管，我帮你约了 1 月 20 日上午。",
                ),
                ("user", "好，到时候提醒我"),
            ],
        ),
        Spec(
            "school_signup",
            "孩子学校 - 报名",
            "孩子",
            ago(d=2),
            summary="小学入学报名材料：户口本、房产证、预防接种证。",
            messages=[
                ("user", "小学入学要准备什么材料"),
                (
                    "assistant",
                    "户口本原件、房产证或租赁备案、预防接种证、一寸照片 4 张，3 月 1 日起网上登记。",
                ),
            ],
        ),
        Spec(
            "school_meeting",
            "孩子学校 - 家长会",
            "孩子",
            ago(d=4),
            summary="下周家长会要发言 3 分钟，主题是陪孩子阅读。",
            messages=[
                ("user", "家长会老师让我分享一下陪读经验，3 分钟"),
                (
                    "assistant",
                    "可以讲三点：固定睡前 20 分钟、让孩子自己选书、读完聊一个问题。我先写个提纲。",
                ),
            ],
        ),
        Spec(
            "japanese",
            "日语学习",
            "学习",
            ago(d=2, h=5),
            summary="每天背 30 个 N3 单词，加一段 NHK 简单新闻跟读。",
            messages=[
                ("user", "今天的日语单词和跟读材料发我"),
                (
                    "assistant",
                    "今天 30 个词以「〜について」相关表达为主，跟读材料是 NHK やさしいことば 的天气新闻。",
                ),
            ],
        ),
        Spec(
            "tax",
            "个税专项附加扣除",
            "理财",
            ago(d=5),
            summary="在个税 App 里填报子女教育、房贷利息、赡养老人三项扣除。",
            messages=[
                ("user", "今年的专项附加扣除怎么填"),
                (
                    "assistant",
                    "子女教育每月 2000，房贷利息每月 1000，赡养老人你是独生子女每月 3000，都选“由本人扣除”。",
                ),
            ],
        ),
        Spec(
            "checkup_new",
            "体检报告解读",
            "生活",
            ago(d=1, h=1),
            summary="解读今年体检报告：甲状腺结节 3 类、轻度脂肪肝。",
            messages=[
                ("user", "今年的体检报告出来了，帮我看看"),
                (
                    "assistant",
                    "需要关注两项：甲状腺结节 TI-RADS 3 类，建议半年后复查 B 超；轻度脂肪肝，建议控制饮食。",
                ),
            ],
        ),
        Spec(
            "checkup_old",
            "体检报告解读",
            "生活",
            ago(d=25),
            state="aborted",
            summary="去年体检报告：血脂偏高，建议三个月后复查。",
            messages=[
                ("user", "帮我看下去年的体检报告"),
                ("assistant", "甘油三酯 2.1 偏高，其他正常，建议三个月后复查血脂。"),
            ],
        ),
        Spec(
            "oldphone",
            "旧手机卖掉",
            "生活",
            ago(d=9),
            archived=True,
            summary="在二手平台卖旧 iPhone 12，挂价 1800。",
            messages=[
                ("user", "旧手机挂到二手平台上卖掉吧"),
                ("assistant", "同款成交价 1700-1900，建议挂 1800，先备份再抹掉数据。"),
            ],
        ),
        Spec(
            "movie",
            "闲聊：周末看什么电影",
            "生活",
            ago(m=5),
            labels=[SIDE_LABEL],
            messages=[
                ("user", "周末带孩子看什么电影好"),
                ("assistant", "可以看那部新上的动画片，评分 8.6，片长 95 分钟，适合 6 岁以上。"),
            ],
        ),
    ]
    cases = [
        Case("接着刚才那个", "existing", ["reference_only"], "ref_top", target="tickets"),
        Case(
            "继续",
            "existing",
            ["bare_continuation", "reference_only"],
            "ref_top",
            target="tickets",
        ),
        Case(
            "G501 一等座还有票吗",
            "existing",
            ["identifiers"],
            "unique",
            target="tickets",
            keys=("G501",),
            layer="evidence",
        ),
        Case(
            "新年礼物清单那个再加两样，给我爸的",
            "existing",
            ["name_contains_new"],
            "unique",
            target="newyear_gift",
            keys=("新年礼物",),
            layer="name",
        ),
        Case(
            "新车保险最后定哪家了？",
            "existing",
            ["name_contains_new"],
            "unique",
            target="newcar_ins",
            keys=("新车保险",),
            layer="name",
        ),
        Case(
            "燃气公司上门改管是哪天来着",
            "existing",
            ["stale_summary"],
            "unique",
            target="reno",
            keys=("改管",),
            layer="evidence",
        ),
        Case(
            "热水器装阳台那边的话，要不要加个柜子呢",
            "existing",
            ["stale_summary", "filler_words"],
            "unique",
            target="reno",
            keys=("热水器",),
            layer="evidence",
        ),
        Case(
            "孩子学校的事",
            "clarify",
            ["short_ambiguous", "similar_names"],
            "ambiguous",
            keys=("孩子学校",),
        ),
        Case(
            "家长会的发言稿帮我写一下吧",
            "existing",
            ["similar_names", "filler_words"],
            "unique",
            target="school_meeting",
            keys=("家长会",),
            layer="name",
        ),
        Case(
            "入学报名要带的材料再核对一下",
            "existing",
            ["similar_names", "partial_name", "filler_words"],
            "unique",
            target="school_signup",
            keys=("报名",),
            layer="name",
        ),
        Case(
            "把个税那个扣除的事儿弄一下吧",
            "existing",
            ["filler_words", "partial_name"],
            "unique",
            target="tax",
            keys=("个税",),
            layer="name",
        ),
        Case(
            "学日语那个今天的单词呢",
            "existing",
            ["partial_name", "filler_words"],
            "unique",
            target="japanese",
            keys=("日语",),
            layer="name",
        ),
        Case(
            "体检报告那个继续看",
            "existing",
            ["recency", "similar_names"],
            "recency",
            target="checkup_new",
            other="checkup_old",
            keys=("体检报告",),
            layer="name",
        ),
        Case("旧手机卖出去了没", "clarify", ["ineligible"], "ineligible", keys=("旧手机",)),
        Case("周末那部电影的票买了吗", "clarify", ["ineligible"], "ineligible", keys=("电影",)),
        Case(
            "新开一个任务，帮我规划一下 3 月去大理的行程",
            "new",
            ["explicit_new"],
            "none",
            keys=("大理",),
        ),
        Case("帮我想个朋友圈文案", "clarify", ["no_match"], "none", keys=("朋友圈",)),
    ]
    fill = dict(
        n_today=0,
        n_week=10,
        n_old=14,
        week_min=ago(h=14),
        old_range=(ago(d=12), ago(d=70)),
        workspaces={"生活", "学习", "理财", "孩子"},
    )
    return sid, now, specs, cases, fill


# --------------------------------------------------------------------------------------
# Snapshot 3: US SaaS engineering manager (English), Wednesday afternoon. Tasks whose names
# contain "New"/"Create new", several "session"/"onboarding" tasks, a log-heavy e2e task.
# --------------------------------------------------------------------------------------


def snapshot_saas(rng: random.Random):
    sid = "saas-eng-us-2027-02-03"
    now = datetime.fromisoformat("2027-02-03T14:10:00-05:00")
    specs = [
        Spec(
            "session_timeout",
            "New session timeout bug",
            "backend",
            ago(h=2, m=10),
            state="running",
            summary="Users are logged out after 5 minutes instead of 30: the new auth pods don't get SESSION_IDLE_TIMEOUT and fall back to 300s.",
            messages=[
                ("user", "Since yesterday's deploy people get logged out after 5 minutes."),
                (
                    "assistant",
                    "The new auth pods are missing SESSION_IDLE_TIMEOUT in their env, so src/auth/session.ts falls back to 300 seconds. The old pods still read 1800.",
                ),
                (
                    "user",
                    "Add it to the Helm values and add a startup check that fails if it's missing.",
                ),
                ("assistant", "Done in the chart; the startup check is in review as PR #912."),
            ],
        ),
        Spec(
            "create_invoice",
            "Create new invoice page",
            "frontend",
            ago(h=4),
            summary="Build the create-invoice page: line items, tax rates, PDF preview.",
            messages=[
                ("user", "Let's build the create invoice page. Line items, tax, PDF preview."),
                (
                    "assistant",
                    "Scaffolded apps/web/src/routes/invoices/new.tsx with a line-item table and a live total.",
                ),
                ("user", "Adding a line with 0% tax crashes it."),
                (
                    "assistant",
                    "taxRate 0 is falsy, so we skip building the tax row and then read .amount of undefined. Fixing it with a nullish check.",
                ),
            ],
        ),
        Spec(
            "new_onboarding",
            "New user onboarding flow",
            "frontend",
            ago(d=1),
            summary="Redesign the first-run onboarding: cut 6 screens to 3, with a skip option.",
            messages=[
                ("user", "Our first-run flow has 6 screens; cut it to 3."),
                (
                    "assistant",
                    "Proposal: workspace name, invite teammates (skippable), pick a template. Drop the tour video and the survey.",
                ),
            ],
        ),
        Spec(
            "emp_onboarding",
            "Employee onboarding checklist",
            "people",
            ago(d=2),
            summary="Checklist for the two engineers starting Feb 10: laptops, accounts, buddies.",
            messages=[
                ("user", "Two engineers start Feb 10, prep their onboarding."),
                (
                    "assistant",
                    "Ordered 2 MacBook Pros (arriving Feb 6), Google/GitHub/Slack accounts on Feb 9, buddies: Omar and Lena.",
                ),
            ],
        ),
        Spec(
            "replay",
            "Session replay setup",
            "frontend",
            ago(h=6),
            summary="Set up PostHog session replay with PII masking on form inputs.",
            messages=[
                ("user", "Set up session replay, but nothing sensitive may be recorded."),
                (
                    "assistant",
                    "PostHog replay with maskAllInputs on, plus a ph-no-capture class on the billing and profile forms to keep PII out.",
                ),
            ],
        ),
        Spec(
            "cursor",
            "Realtime cursor lag",
            "backend",
            ago(m=30),
            state="running",
            summary="Collaborative cursors lag up to 2s in big documents.",
            messages=[
                ("user", "Cursors lag about 2s in docs with 20+ editors."),
                (
                    "assistant",
                    "Every cursor move is fanned out through Redis pub/sub to all pods; with 20 editors that's ~400 msgs/s per doc. Throttling to 20Hz per client and batching per tick should fix it.",
                ),
                ("user", "Try the throttle first."),
            ],
        ),
        Spec(
            "e2e",
            "Nightly e2e failures",
            "frontend",
            ago(m=55),
            state="waiting_for_user",
            summary="Nightly Playwright run fails intermittently; reading the full log.",
            messages=[
                ("user", "Nightly e2e failed again, here's the log."),
                *chunk(
                    playwright_log(
                        rng,
                        "  ✘  98 [chromium] › billing/upgrade.spec.ts:88:3 › upgrade to Teams › redirects after payment\n"
                        '    TimeoutError: page.waitForURL: Timeout 15000ms exceeded while waiting for "**/billing/success"',
                        97,
                        130,
                    ),
                    10,
                    2,
                ),
                ("assistant", "Most of the log is passing tests and retries; still reading.", 60),
            ],
        ),
        Spec(
            "roadmap",
            "Q1 roadmap",
            "product",
            ago(h=5),
            summary="Q1 roadmap: SSO, audit log, usage-based billing; SSO goes first.",
            messages=[
                ("user", "Draft the Q1 roadmap: SSO, audit log, usage billing."),
                (
                    "assistant",
                    "Ordered by revenue impact: SSO (3 deals blocked on it), then audit log, then usage-based billing.",
                ),
                (
                    "user",
                    "Different thing: legal wants our DPA template updated for EU customers.",
                    259200,
                ),
                (
                    "assistant",
                    "Updated the DPA: new SCC module 2 clause, a link to the subprocessor list, and the 72-hour breach notice. Sent to legal for review.",
                ),
                ("user", "Ping me when legal replies."),
            ],
        ),
        Spec(
            "csv_import",
            "Customer CSV import",
            "backend",
            ago(d=1, h=6),
            state="blocked",
            summary="The contacts importer rejects some customer files.",
            messages=[
                ("user", "Acme's contacts CSV fails to import."),
                (
                    "tool",
                    "ImportError [ENG-771] row 1, column 'email': unexpected character U+FEFF",
                ),
                (
                    "assistant",
                    "That's a UTF-8 byte-order mark from Excel. We can strip it before parsing.",
                ),
            ],
        ),
        Spec(
            "metrics_new",
            "Weekly metrics email",
            "product",
            ago(h=3, m=20),
            summary="Weekly metrics email for Feb 3: WAU, trial conversions, churn.",
            messages=[
                ("user", "Prep this week's metrics email."),
                ("assistant", "WAU 12,480 (+3%), trial conversion 14.2%, churn 0.9%. Draft ready."),
            ],
        ),
        Spec(
            "metrics_old",
            "Weekly metrics email",
            "product",
            ago(d=21),
            state="aborted",
            summary="Weekly metrics email for Jan 13.",
            messages=[
                ("user", "Prep the metrics email."),
                ("assistant", "WAU 11,900, trial conversion 13.1%. Sent."),
            ],
        ),
        Spec(
            "samesite",
            "Session cookie SameSite fix",
            "backend",
            ago(d=8),
            archived=True,
            summary="Set SameSite=None; Secure on the session cookie for the embedded widget.",
            messages=[
                ("user", "The embedded widget loses its login in Safari."),
                (
                    "assistant",
                    "The session cookie needs SameSite=None; Secure for third-party contexts.",
                ),
            ],
        ),
        Spec(
            "coord",
            "Coordinator: release 5.2",
            "product",
            ago(h=1),
            role="coordination",
            messages=[("assistant", "Dispatched subagent: check every link in the 5.2 changelog.")],
        ),
        Spec(
            "links",
            "Check changelog links",
            "product",
            ago(m=50),
            parent="coord",
            state="running",
            summary="Checked 64 changelog links; 3 return 404.",
            messages=[("assistant", "64 links checked, 3 broken (404).")],
        ),
        Spec(
            "indexer",
            "Index Notion workspace",
            "product",
            ago(m=20),
            role="indexer",
            state="running",
            messages=[("tool", "indexed 912/1,430 pages of Notion workspace Product")],
        ),
    ]
    cases = [
        Case(
            "how is the new session timeout bug going?",
            "existing",
            ["name_contains_new", "similar_names"],
            "unique",
            target="session_timeout",
            keys=("session timeout",),
            layer="name",
        ),
        Case(
            "Did the fix for people getting logged out after 5 minutes ship?",
            "existing",
            ["partial_name", "similar_names"],
            "unique",
            target="session_timeout",
            keys=("logged out",),
            layer="summary",
        ),
        Case(
            "Any progress on the create new invoice page?",
            "existing",
            ["name_contains_new"],
            "unique",
            target="create_invoice",
            keys=("invoice page",),
            layer="name",
        ),
        Case(
            "The crash in apps/web/src/routes/invoices/new.tsx with a 0% tax line — is it fixed?",
            "existing",
            ["identifiers", "name_contains_new"],
            "unique",
            target="create_invoice",
            keys=("new.tsx",),
            layer="evidence",
        ),
        Case(
            "New user onboarding flow: let's finalize the 3 screens",
            "existing",
            ["name_contains_new", "similar_names"],
            "unique",
            target="new_onboarding",
            keys=("user onboarding",),
            layer="name",
        ),
        Case(
            "onboarding",
            "clarify",
            ["short_ambiguous", "similar_names"],
            "ambiguous",
            keys=("onboarding",),
        ),
        Case(
            "the session one",
            "clarify",
            ["short_ambiguous", "similar_names"],
            "ambiguous",
            keys=("session",),
        ),
        Case(
            "Did the laptops for the two new hires arrive?",
            "existing",
            ["similar_names", "partial_name"],
            "unique",
            target="emp_onboarding",
            keys=("laptops",),
            layer="summary",
        ),
        Case(
            "Make the template step skippable too in the first-run flow",
            "existing",
            ["partial_name", "similar_names"],
            "unique",
            target="new_onboarding",
            keys=("first-run",),
            layer="summary",
        ),
        Case(
            "Is PII masking on for the replay recordings?",
            "existing",
            ["partial_name", "similar_names"],
            "unique",
            target="replay",
            keys=("PII",),
            layer="summary",
        ),
        Case(
            "Any update on the cursor lag in big docs?",
            "existing",
            ["partial_name"],
            "unique",
            target="cursor",
            keys=("cursor lag",),
            layer="name",
        ),
        Case("keep going", "clarify", ["bare_continuation", "reference_only"], "ref_unclear"),
        Case("continue that one", "clarify", ["reference_only"], "ref_unclear"),
        Case(
            "the waitForURL timeout on /billing/success — is that the Stripe redirect?",
            "existing",
            ["repetitive_logs", "identifiers"],
            "unique",
            target="e2e",
            keys=("waitForURL",),
            layer="evidence",
        ),
        Case(
            "Did legal sign off on the updated DPA for EU customers?",
            "existing",
            ["stale_summary"],
            "unique",
            target="roadmap",
            keys=("DPA",),
            layer="evidence",
        ),
        Case(
            "ENG-771: just strip the BOM and rerun the import",
            "existing",
            ["identifiers"],
            "unique",
            target="csv_import",
            keys=("ENG-771",),
            layer="evidence",
        ),
        Case(
            "Send out the weekly metrics email",
            "existing",
            ["recency", "similar_names"],
            "recency",
            target="metrics_new",
            other="metrics_old",
            keys=("weekly metrics email",),
            layer="name",
        ),
        Case(
            "What happened with the SameSite cookie fix?",
            "clarify",
            ["ineligible", "similar_names"],
            "ineligible",
            keys=("SameSite",),
        ),
        Case(
            "did the changelog link check finish?",
            "clarify",
            ["ineligible"],
            "ineligible",
            keys=("changelog",),
        ),
        Case(
            "Is the Notion indexing done?",
            "clarify",
            ["ineligible"],
            "ineligible",
            keys=("Notion",),
        ),
        Case(
            "Open a new task: load-test the session timeout fix before Friday",
            "new",
            ["explicit_new"],
            "new_overlap",
            keys=("session timeout",),
        ),
        Case(
            "new task please — draft the Q2 hiring plan",
            "new",
            ["explicit_new"],
            "none",
            keys=("Q2 hiring",),
        ),
        Case(
            "Find me a good Thai place near the office for lunch",
            "clarify",
            ["no_match"],
            "none",
            keys=("Thai",),
        ),
    ]
    fill = dict(
        n_today=4,
        n_week=8,
        n_old=14,
        today_min=ago(h=1, m=10),
        old_range=(ago(d=15), ago(d=75)),
        workspaces={
            "backend",
            "frontend",
            "devops",
            "support",
            "people",
            "home",
            "accounting",
            "product",
            "ml",
        },
        english_only=True,
    )
    return sid, now, specs, cases, fill


# --------------------------------------------------------------------------------------
# Snapshot 4: data team (mixed Chinese/English), window edge. Positions 30-33 are placed
# exactly; the task at position 33 shares words with the task at position 1.
# --------------------------------------------------------------------------------------


def snapshot_dataedge(rng: random.Random):
    sid = "data-window-edge-2027-01-20"
    now = datetime.fromisoformat("2027-01-20T17:30:00+08:00")
    keyed = {
        1: Spec(
            "spark_tune",
            "Spark 作业调优",
            "数仓",
            ago(m=15),
            summary="每日订单宽表 Spark 作业从 2 小时优化到 40 分钟：调整 shuffle 分区和广播阈值。",
            messages=[
                ("user", "订单宽表的 Spark 作业太慢了，要跑 2 小时"),
                (
                    "assistant",
                    "shuffle 分区用的是默认 200，而且 user_id 上有数据倾斜。打开 AQE，再把 spark.sql.autoBroadcastJoinThreshold 调到 20MB，测试环境 40 分钟跑完。",
                ),
                ("user", "广播阈值再大点试试"),
                ("assistant", "好，下一轮用 50MB 跑，跑完把 stage 耗时对比发你。"),
            ],
        ),
        2: Spec(
            "ab_report",
            "新版搜索 AB 实验报告",
            "数仓",
            ago(),
            summary="新版搜索排序实验：点击率 +4.1%，下单转化没有显著差异。",
            messages=[
                ("user", "新版搜索实验跑满两周了，出个报告"),
                (
                    "assistant",
                    "实验组点击率 +4.1%（p=0.01），下单转化 +0.3%（不显著），人均搜索次数 -6%。建议全量，但继续观察转化。",
                ),
            ],
        ),
        4: Spec(
            "gmv_def",
            "GMV 口径对齐",
            "数仓",
            ago(),
            summary="和财务对齐 GMV 口径：是否含运费、是否扣退款。",
            messages=[
                ("user", "我们算的 GMV 和财务那边对不上"),
                (
                    "assistant",
                    "差异主要两点：我们含运费、不扣退款；财务不含运费、扣已完成退款。建议看板上两个口径都展示。",
                ),
                ("user", "另一件事，DAU 看板昨天的数字翻倍了", 345600),
                (
                    "assistant",
                    "查了埋点：Android 埋点 SDK 3.8.0 在切后台再回来时重复上报 app_start，去重后 DAU 恢复正常。已经提给客户端修复。",
                ),
            ],
        ),
        6: Spec(
            "backfill",
            "订单宽表回刷",
            "数仓",
            ago(),
            state="blocked",
            summary="回刷 2024 全年的订单宽表分区，任务反复重试。",
            messages=[
                ("user", "2024 年的订单宽表要全部回刷一遍，帮我盯着 DAG"),
                *chunk(
                    airflow_retry_log(
                        rng,
                        'psycopg2.errors.DiskFull: could not extend file "base/16384/t3_98121": No space left on device',
                        71,
                        110,
                    ),
                    10,
                    3,
                ),
                ("assistant", "任务一直在重试，我先把日志存下来，还没找到根因。", 90),
            ],
        ),
        30: Spec("lineage", "数据血缘工具调研", "数仓", ago(), activity="created"),
        31: Spec("ch_migrate", "ClickHouse 集群迁移", "数仓", ago(), activity="status"),
        32: Spec(
            "tag_platform",
            "标签平台 v2 上线",
            "数仓",
            ago(),
            state="blocked",
            summary="标签平台 v2：200 个标签迁移完成 170 个，剩下 30 个依赖实时特征。",
            messages=[
                ("user", "标签平台 v2 还差多少标签没迁"),
                ("assistant", "还剩 30 个，都依赖实时特征，要等 Flink 特征任务上线。"),
            ],
        ),
        33: Spec(
            "spark_oom",
            "Spark 作业 OOM 排查",
            "数仓",
            ago(),
            summary="用户行为日志的 Spark 作业 executor OOM，怀疑 explode 之后数据膨胀。",
            messages=[
                ("user", "行为日志那个 Spark 作业 executor 又 OOM 了"),
                (
                    "assistant",
                    "explode 之后行数膨胀 40 倍，建议先过滤再 explode，executor 内存从 8g 提到 12g 作为临时方案。",
                ),
            ],
        ),
    }
    ineligible = [
        Spec(
            "segment_sql",
            "用户分群 SQL 优化",
            "数仓",
            ago(d=3),
            archived=True,
            summary="用户分群 SQL 从 12 分钟优化到 90 秒。",
            messages=[
                ("user", "用户分群的 SQL 太慢"),
                ("assistant", "把 6 个子查询改成一次宽表扫描，12 分钟降到 90 秒。"),
            ],
        ),
        Spec(
            "tea",
            "闲聊：下午茶拼单",
            "数仓",
            ago(m=10),
            labels=[SIDE_LABEL],
            messages=[
                ("user", "下午茶拼单喝什么"),
                ("assistant", "组里 9 个人，点两家：一家奶茶一家咖啡，满 100 减 20。"),
            ],
        ),
        Spec(
            "kb_index",
            "索引飞书知识库：数据规范",
            "数仓",
            ago(m=1),
            role="indexer",
            state="running",
            messages=[("tool", "已索引 数据规范 空间 312/540 篇文档")],
        ),
        Spec(
            "coord",
            "协调：数仓成本治理",
            "数仓",
            ago(m=40),
            role="coordination",
            messages=[("assistant", "已派发子任务：汇总各业务线的存储成本。")],
        ),
        Spec(
            "storage_cost",
            "汇总各业务线存储成本",
            "数仓",
            ago(m=35),
            parent="coord",
            state="running",
            summary="汇总 6 条业务线的 HDFS/OSS 存储成本：广告线占 41%。",
            messages=[("assistant", "6 条业务线存储成本已汇总，广告线占 41%，其次是推荐线 22%。")],
        ),
    ]
    cases = [
        Case(
            "Spark 作业调优那个继续，广播阈值调到 50MB 试试",
            "existing",
            ["similar_names", "mixed_zh_en"],
            "unique",
            target="spark_tune",
            keys=("调优",),
            layer="name",
        ),
        Case(
            "接着弄吧",
            "existing",
            ["bare_continuation", "reference_only", "filler_words"],
            "ref_top",
            target="spark_tune",
        ),
        Case(
            "Spark 作业 OOM 那个排查到哪了",
            "clarify",
            ["position_33", "similar_names", "mixed_zh_en"],
            "ineligible",
            keys=("OOM",),
            position=33,
        ),
        Case(
            "where are we on the Spark executor OOM investigation?",
            "clarify",
            ["position_33", "similar_names"],
            "ineligible",
            keys=("OOM",),
            position=33,
        ),
        Case(
            "标签平台 v2 上线卡在哪了",
            "existing",
            ["position_33", "mixed_zh_en"],
            "unique",
            target="tag_platform",
            keys=("标签平台",),
            layer="name",
            position=32,
        ),
        Case(
            "ClickHouse 集群迁移的进度更新一下",
            "existing",
            ["position_33", "mixed_zh_en", "filler_words"],
            "unique",
            target="ch_migrate",
            keys=("集群迁移",),
            layer="name",
            position=31,
        ),
        Case(
            "把数据血缘工具调研开个头吧",
            "existing",
            ["position_33", "filler_words"],
            "unique",
            target="lineage",
            keys=("血缘",),
            layer="name",
            position=30,
        ),
        Case(
            "新版搜索实验报告那个结论出来了吗",
            "existing",
            ["name_contains_new", "partial_name"],
            "unique",
            target="ab_report",
            keys=("新版搜索",),
            layer="name",
        ),
        Case(
            "DAU 翻倍那个，SDK 3.8.0 重复上报修了没",
            "existing",
            ["stale_summary", "identifiers", "mixed_zh_en"],
            "unique",
            target="gmv_def",
            keys=("3.8.0",),
            layer="evidence",
        ),
        Case(
            "No space left on device 那个，是不是回刷的临时表把盘写满了",
            "existing",
            ["repetitive_logs", "identifiers", "mixed_zh_en"],
            "unique",
            target="backfill",
            keys=("No space left",),
            layer="evidence",
        ),
        Case(
            "各业务线存储成本汇总好了吗",
            "clarify",
            ["ineligible"],
            "ineligible",
            keys=("存储成本",),
        ),
        Case(
            "用户分群 SQL 再优化一下",
            "clarify",
            ["ineligible", "mixed_zh_en"],
            "ineligible",
            keys=("用户分群",),
        ),
        Case("下午茶拼单了吗", "clarify", ["ineligible"], "ineligible", keys=("下午茶",)),
        Case(
            "数据规范那个知识库索引好了吗",
            "clarify",
            ["ineligible"],
            "ineligible",
            keys=("数据规范",),
        ),
        Case(
            "新建一个任务：评估一下用 Iceberg 替换 Hive 表",
            "new",
            ["explicit_new", "mixed_zh_en"],
            "none",
            keys=("Iceberg",),
        ),
        Case("帮我订下周三下午的会议室", "clarify", ["no_match"], "none", keys=("会议室",)),
    ]
    fill = dict(
        ranked=keyed,
        n_eligible=40,
        ineligible=ineligible,
        workspaces={"数仓", "ml", "devops", "backend", "研发"},
    )
    return sid, now, [*keyed.values(), *ineligible], cases, fill


# --------------------------------------------------------------------------------------
# Snapshot 5: SRE on call at night (mixed Chinese/English). One alert task was touched
# minutes ago; the rest are from yesterday evening or older. Long GC / filebeat logs.
# --------------------------------------------------------------------------------------


def snapshot_night(rng: random.Random):
    sid = "sre-night-2027-01-08"
    now = datetime.fromisoformat("2027-01-08T02:40:00+08:00")
    specs = [
        Spec(
            "slb",
            "凌晨告警：SLB 健康检查失败",
            "devops",
            ago(m=3),
            state="running",
            summary="02:20 起华东 SLB 后端 3 台 ECS 健康检查失败，流量由剩余 5 台承接。",
            messages=[
                ("user", "SLB 健康检查告警了，一起看下"),
                (
                    "assistant",
                    "华东 SLB 后端 8 台里 3 台健康检查失败，都是 02:18 打过内核热补丁的那批，/healthz 返回 503。",
                ),
                ("user", "先把那 3 台摘掉"),
                ("assistant", "已摘除，流量由 5 台承接，CPU 68%。正在看 /healthz 为什么返回 503。"),
            ],
            pace=90,
        ),
        Spec(
            "logdisk",
            "日志盘打满",
            "devops",
            ago(h=7, m=20),
            state="waiting_for_user",
            messages=[
                ("user", "app-07 的日志盘 97% 了，帮我看看 filebeat 和 logrotate 的日志"),
                *chunk(
                    filebeat_log(
                        rng,
                        'logrotate: error: skipping "/var/log/app/gc.log" because parent directory has insecure permissions '
                        '(It\'s world writable or writable by group which is not "root")',
                        83,
                        120,
                    ),
                    12,
                    2,
                ),
                ("assistant", "日志还在翻，目前看 filebeat 一直在正常推送。", 40),
            ],
        ),
        Spec(
            "fullgc",
            "Full GC 频繁",
            "研发",
            ago(d=2),
            summary="结算服务频繁 Full GC，正在看 GC 日志。",
            messages=[
                ("user", "结算服务这两天 Full GC 特别多，GC 日志给你"),
                *chunk(gc_log(rng, "java.lang.OutOfMemoryError: Metaspace", 102, 140), 10, 2),
                ("assistant", "GC 日志很长，大部分是 Young GC，我还在看。", 60),
            ],
        ),
        Spec(
            "mq_order",
            "MQ 消息堆积 - 订单",
            "研发",
            ago(d=1),
            summary="订单 topic 堆积 80 万条，消费慢在同步调用风控服务。",
            messages=[
                ("user", "订单 topic 堆了 80 万条消息"),
                (
                    "assistant",
                    "每条消息都同步调一次风控，平均 120ms。改成批量调用 + 本地缓存规则，单消费者吞吐能提 5 倍。",
                ),
            ],
        ),
        Spec(
            "mq_stock",
            "MQ 消息堆积 - 库存",
            "研发",
            ago(d=1, h=8),
            summary="库存扣减 topic 堆积，计划把消费者从 4 个扩到 8 个。",
            messages=[
                ("user", "库存扣减的消息也堆了"),
                (
                    "assistant",
                    "topic 有 8 个队列，但只有 4 个消费者。扩到 8 个消费者就能一一对应。",
                ),
            ],
        ),
        Spec(
            "newnode",
            "新建节点无法加入集群",
            "devops",
            ago(d=1, h=5),
            summary="新扩容的 3 台 node 一直 NotReady，kubelet 报 x509 证书错误。",
            messages=[
                ("user", "新加的 3 台机器一直 NotReady"),
                (
                    "tool",
                    "kubelet[2211]: x509: certificate has expired or is not yet valid: current time 2027-01-07T06:12:09Z is before 2027-01-07T15:02:44Z",
                ),
                (
                    "assistant",
                    "新机器时钟比集群慢了约 9 小时，NTP 没配，所以证书看起来“尚未生效”。配好 chrony 后重启 kubelet 即可。",
                ),
            ],
        ),
        Spec(
            "tls",
            "TLS 证书过期",
            "devops",
            ago(d=3),
            summary="*.pay.example.cn 证书 1 月 15 日到期，需要续签并更新到 SLB。",
            messages=[
                ("user", "支付域名的证书快到期了"),
                (
                    "assistant",
                    "*.pay.example.cn 1 月 15 日到期，续签后要同时更新 SLB 和 CDN 两处。",
                ),
            ],
        ),
        Spec(
            "dblag",
            "数据库主从延迟",
            "研发",
            ago(d=2, h=3),
            summary="主从延迟 30s，定位到夜间大事务批量删除，已改成分批删除。",
            messages=[
                ("user", "主从延迟又到 30 秒了"),
                (
                    "assistant",
                    "是 02:00 的清理任务一次删 200 万行，大事务在从库回放很慢。改成每批 5000 行、间隔 100ms。",
                ),
                ("user", "今晚又延迟了，这次不是删除任务", 345600),
                (
                    "assistant",
                    "这次是 pt-online-schema-change 在给 orders 表加索引，从库单线程回放 row event，延迟到 400 秒。",
                ),
                ("user", "加索引的变更先暂停"),
            ],
        ),
        Spec(
            "cdn",
            "CDN 回源失败",
            "devops",
            ago(d=5),
            archived=True,
            summary="静态资源 CDN 回源 502，源站白名单没加新 IP 段。",
            messages=[
                ("user", "图片 CDN 回源 502"),
                ("assistant", "CDN 厂商新增了回源 IP 段，源站安全组没放行。"),
            ],
        ),
        Spec(
            "snack",
            "闲聊：夜宵点什么",
            "devops",
            ago(m=20),
            labels=[SIDE_LABEL],
            messages=[
                ("user", "值夜班饿了，夜宵点什么"),
                ("assistant", "这个点还开的有粥铺和烧烤，粥铺 30 分钟能到。"),
            ],
        ),
        Spec(
            "scan",
            "巡检：全量域名扫描",
            "devops",
            ago(h=1),
            role="discovery",
            state="running",
            messages=[("tool", "scanned 318 domains: 4 with DNS records pointing to released IPs")],
        ),
    ]
    cases = [
        Case("继续", "existing", ["bare_continuation", "reference_only"], "ref_top", target="slb"),
        Case(
            "keep going, 后端那几台现在什么情况",
            "existing",
            ["reference_only", "mixed_zh_en"],
            "ref_top",
            target="slb",
        ),
        Case(
            "SLB 健康检查那个，三台后端恢复了吗",
            "existing",
            ["mixed_zh_en"],
            "unique",
            target="slb",
            keys=("健康检查",),
            layer="name",
        ),
        Case(
            "logrotate 跳过 gc.log 那个是不是目录权限的问题",
            "existing",
            ["repetitive_logs", "identifiers", "mixed_zh_en"],
            "unique",
            target="logdisk",
            keys=("gc.log",),
            layer="evidence",
        ),
        Case(
            "Metaspace 溢出那个，是不是 Groovy 脚本动态加载类导致的",
            "existing",
            ["repetitive_logs", "identifiers", "mixed_zh_en"],
            "unique",
            target="fullgc",
            keys=("Metaspace",),
            layer="evidence",
        ),
        Case(
            "库存那个消息堆积，消费者扩到 8 个了吗",
            "existing",
            ["similar_names"],
            "unique",
            target="mq_stock",
            keys=("库存",),
            layer="name",
        ),
        Case(
            "消息堆积",
            "clarify",
            ["short_ambiguous", "similar_names"],
            "ambiguous",
            keys=("消息堆积",),
        ),
        Case(
            "新建节点加不进集群那个，kubelet 证书的问题解决了吗",
            "existing",
            ["name_contains_new", "mixed_zh_en"],
            "unique",
            target="newnode",
            keys=("新建节点",),
            layer="name",
        ),
        Case("证书", "clarify", ["short_ambiguous"], "ambiguous", keys=("证书",)),
        Case(
            "pay.example.cn 的证书续上了没",
            "existing",
            ["identifiers"],
            "unique",
            target="tls",
            keys=("pay.example.cn",),
            layer="summary",
        ),
        Case(
            "加索引导致主从延迟的那个，换成 gh-ost 行不行",
            "existing",
            ["stale_summary", "mixed_zh_en"],
            "unique",
            target="dblag",
            keys=("加索引",),
            layer="evidence",
        ),
        Case(
            "CDN 回源失败接着查",
            "clarify",
            ["ineligible", "mixed_zh_en"],
            "ineligible",
            keys=("回源",),
        ),
        Case("夜宵到了没", "clarify", ["ineligible"], "ineligible", keys=("夜宵",)),
        Case(
            "全量域名扫描的结果出来了吗",
            "clarify",
            ["ineligible"],
            "ineligible",
            keys=("域名扫描",),
        ),
        Case(
            "新建一个任务，写今晚 SLB 故障的复盘",
            "new",
            ["explicit_new", "mixed_zh_en"],
            "new_overlap",
            keys=("SLB",),
        ),
        Case("帮我把明早 9 点的闹钟定上", "clarify", ["no_match"], "none", keys=("闹钟",)),
    ]
    fill = dict(
        n_today=0,
        n_week=10,
        n_old=14,
        week_min=ago(h=8),
        old_range=(ago(d=12), ago(d=90)),
        workspaces={"devops", "研发", "backend", "ml", "support", "学习"},
    )
    return sid, now, specs, cases, fill


# --------------------------------------------------------------------------------------
# Snapshot 6: sales & finance operations (Chinese), Friday afternoon. Two quote tasks were
# touched minutes apart, so bare continuations are ambiguous here.
# --------------------------------------------------------------------------------------


def snapshot_sales(rng: random.Random):
    sid = "sales-finance-2027-01-22"
    now = datetime.fromisoformat("2027-01-22T16:05:00+08:00")
    specs = [
        Spec(
            "quote_east",
            "客户报价 - 华东区",
            "销售",
            ago(m=6),
            summary="给华东 3 家客户出年度报价，折扣上限 85 折。",
            messages=[
                ("user", "苏州恒泰、无锡天成、宁波海联三家的年度报价帮我出一下"),
                (
                    "assistant",
                    "按去年采购量分档：恒泰 88 折、天成 90 折、海联 92 折，都在 85 折上限内。",
                ),
                ("user", "恒泰说竞品给了 86 折"),
            ],
            pace=200,
        ),
        Spec(
            "quote_south",
            "客户报价 - 华南区",
            "销售",
            ago(m=14),
            summary="华南区 2 家经销商的报价，含运费。",
            messages=[
                ("user", "佛山锦程和东莞立信两家经销商的报价"),
                ("assistant", "含运费报价：锦程 12.6 万、立信 9.8 万，运费按 3% 计入。"),
                ("user", "立信要求分两批发货"),
            ],
            pace=200,
        ),
        Spec(
            "contract_ht",
            "合同审批：HT-2027-0113",
            "法务",
            ago(d=1),
            state="waiting_for_user",
            summary="与杭州云启的年度框架合同，法务已审，等盖章寄出。",
            messages=[
                ("user", "HT-2027-0113 法务审完了吗"),
                (
                    "assistant",
                    "法务已审，改了违约金上限和付款节点两处，客户已确认，等你这边盖章后寄出。",
                ),
            ],
        ),
        Spec(
            "contract_flow",
            "新建合同审批流报错",
            "销售",
            ago(h=3, m=30),
            state="waiting_for_user",
            summary="飞书审批里新建合同时提交报错：表单字段 amount 校验失败。",
            messages=[
                ("user", "销售在飞书里新建合同审批，一提交就报错"),
                (
                    "tool",
                    '审批提交失败：字段 amount 校验失败 (expected number, got string "120,000.00")',
                ),
                (
                    "assistant",
                    "表单里的金额控件被改成了文本控件，带千分位的字符串过不了校验。已经联系飞书管理员改回数字控件。",
                ),
                ("user", "改好了告诉我"),
            ],
        ),
        Spec(
            "receivable",
            "回款跟进",
            "财务",
            ago(h=3),
            summary="跟进 12 月应收：3 家客户合计 86 万未回款。",
            messages=[
                ("user", "12 月还有哪些客户没回款"),
                ("assistant", "3 家合计 86 万：南通宏远 23 万、合肥中科 38 万、常州金泰 25 万。"),
                (
                    "user",
                    "中科和金泰都回了。宏远说给我们开商票，3 月 15 日到期，能不能贴现",
                    345600,
                ),
                (
                    "assistant",
                    "可以贴现，现在贴现率大约 3.2%，23 万贴现成本约 1,300 元。要先确认承兑行是哪家。",
                ),
                ("user", "我去问下承兑行"),
            ],
        ),
        Spec(
            "red_invoice",
            "发票红冲",
            "财务",
            ago(d=2),
            summary="给客户红冲一张开错税率的专票并按 13% 重开。",
            messages=[
                ("user", "发票号 24442000000056781234 税率开成 6% 了，应该是 13%"),
                (
                    "assistant",
                    "需要先在电子税务局申请红字信息确认单，对方确认后红冲，再按 13% 重开。",
                ),
            ],
        ),
        Spec(
            "crm_import",
            "CRM 线索导入",
            "销售",
            ago(d=1, h=3),
            summary="把展会收集的 6000 条线索导入 CRM。",
            messages=[
                ("user", "展会的线索导入 CRM 有报错，日志发你"),
                *chunk(
                    crm_import_log(
                        rng,
                        "[crm-import] row 4471 rejected: 手机号格式错误 '+86 139 0000 12' (来源: 上海工博会)",
                        63,
                        120,
                    ),
                    10,
                    2,
                ),
                ("assistant", "绝大部分行都导入成功了，我还在找失败的是哪几行。", 60),
            ],
        ),
        Spec(
            "crm_clean",
            "CRM 线索清洗",
            "销售",
            ago(d=5),
            summary="清洗 2 万条历史线索：去重、补全行业字段。",
            messages=[
                ("user", "CRM 里的老线索太乱了"),
                ("assistant", "按手机号和公司名去重后剩 1.4 万条，行业字段用工商信息补全了 70%。"),
            ],
        ),
        Spec(
            "kickoff",
            "年度销售启动会",
            "行政",
            ago(d=2, h=3),
            summary="2 月 20 日销售启动会：场地、议程、颁奖。",
            messages=[
                ("user", "2 月 20 号的销售启动会要准备什么"),
                (
                    "assistant",
                    "议程：上午业绩回顾和新年目标，下午分区域研讨，晚上颁奖晚宴。场地在确认两家酒店。",
                ),
            ],
        ),
        Spec(
            "rebate",
            "经销商返利政策",
            "销售",
            ago(d=7),
            archived=True,
            summary="经销商季度返利：完成率 100% 返 2%，120% 返 3.5%。",
            messages=[
                ("user", "经销商返利怎么定"),
                ("assistant", "按季度完成率阶梯返利：100% 返 2%，120% 返 3.5%，以货款抵扣。"),
            ],
        ),
        Spec(
            "coord",
            "协调：年度客户盘点",
            "销售",
            ago(h=2),
            role="coordination",
            messages=[("assistant", "已派发子任务：汇总 Top 50 客户的流失风险。")],
        ),
        Spec(
            "churn",
            "汇总 Top 50 客户流失风险",
            "销售",
            ago(h=1, m=50),
            parent="coord",
            state="running",
            summary="Top 50 客户里 7 家流失风险高，主要是续约价格敏感。",
            messages=[("assistant", "Top 50 客户中 7 家流失风险高，已列出负责人和建议动作。")],
        ),
    ]
    cases = [
        Case("接着", "clarify", ["bare_continuation", "reference_only"], "ref_unclear"),
        Case("刚才那个继续弄一下", "clarify", ["reference_only", "filler_words"], "ref_unclear"),
        Case(
            "报价",
            "clarify",
            ["short_ambiguous", "similar_names"],
            "ambiguous",
            keys=("客户报价",),
        ),
        Case(
            "华东那边苏州恒泰的报价再降 2 个点吧",
            "existing",
            ["similar_names", "filler_words"],
            "unique",
            target="quote_east",
            keys=("恒泰",),
            layer="evidence",
        ),
        Case(
            "华南区的报价把运费单列一下",
            "existing",
            ["similar_names"],
            "unique",
            target="quote_south",
            keys=("华南",),
            layer="name",
        ),
        Case(
            "新建合同审批流报错那个，飞书那边回复了没",
            "existing",
            ["name_contains_new", "similar_names"],
            "unique",
            target="contract_flow",
            keys=("新建合同审批流",),
            layer="name",
        ),
        Case(
            "amount 校验失败那个问题怎么样了呢",
            "existing",
            ["identifiers", "filler_words", "mixed_zh_en"],
            "unique",
            target="contract_flow",
            keys=("amount",),
            layer="summary",
        ),
        Case(
            "合同审批",
            "clarify",
            ["short_ambiguous", "similar_names"],
            "ambiguous",
            keys=("合同审批",),
        ),
        Case(
            "HT-2027-0113 的盖章版寄出去了吗",
            "existing",
            ["identifiers", "similar_names"],
            "unique",
            target="contract_ht",
            keys=("HT-2027-0113",),
            layer="name",
        ),
        Case(
            "宏远那张商票贴现的事问了吗",
            "existing",
            ["stale_summary"],
            "unique",
            target="receivable",
            keys=("商票",),
            layer="evidence",
        ),
        Case(
            "回款的事",
            "existing",
            ["partial_name", "stale_summary"],
            "unique",
            target="receivable",
            keys=("回款",),
            layer="name",
        ),
        Case(
            "56781234 那张发票红冲好了没",
            "existing",
            ["identifiers", "partial_name"],
            "unique",
            target="red_invoice",
            keys=("56781234",),
            layer="evidence",
        ),
        Case(
            "第 4471 行手机号格式不对的那条线索怎么处理",
            "existing",
            ["repetitive_logs", "identifiers", "similar_names"],
            "unique",
            target="crm_import",
            keys=("4471",),
            layer="evidence",
        ),
        Case(
            "CRM 线索",
            "clarify",
            ["short_ambiguous", "similar_names", "mixed_zh_en"],
            "ambiguous",
            keys=("CRM 线索",),
        ),
        Case(
            "开年大会的议程定了吗",
            "existing",
            ["partial_name"],
            "unique",
            target="kickoff",
            keys=("启动会",),
            layer="name",
        ),
        Case(
            "返利政策那个接着改吧",
            "clarify",
            ["ineligible", "filler_words"],
            "ineligible",
            keys=("返利",),
        ),
        Case(
            "Top 50 客户流失风险汇总好了吗",
            "clarify",
            ["ineligible", "mixed_zh_en"],
            "ineligible",
            keys=("流失风险",),
        ),
        Case(
            "帮我新建一个任务，整理春季经销商大会的邀请名单",
            "new",
            ["explicit_new"],
            "none",
            keys=("经销商大会",),
        ),
        Case("这个周末天气怎么样", "clarify", ["no_match"], "none", keys=("天气",)),
    ]
    fill = dict(
        n_today=3,
        n_week=8,
        n_old=12,
        today_min=ago(m=40),
        old_range=(ago(d=10), ago(d=60)),
        workspaces={"销售", "财务", "市场", "法务", "行政", "生活"},
    )
    return sid, now, specs, cases, fill


SNAPSHOTS = [
    snapshot_backend,
    snapshot_family,
    snapshot_saas,
    snapshot_dataedge,
    snapshot_night,
    snapshot_sales,
]
SHORT = {
    "backend-lead-2027-01-12": "be",
    "family-weekend-2027-01-16": "fam",
    "saas-eng-us-2027-02-03": "saas",
    "data-window-edge-2027-01-20": "edge",
    "sre-night-2027-01-08": "sre",
    "sales-finance-2027-01-22": "sales",
}


def extra_check(c: Case, tgt: dict | None, where: str) -> None:
    """This dataset's own rules: every case is tagged, and the tags it adds hold."""
    assert c.tags, where
    if "name_contains_new" in c.tags and c.expect == "existing":
        assert tgt is not None, where
        low = tgt["name"].lower()
        assert "new" in low or "新" in tgt["name"], where
    if "bare_continuation" in c.tags:
        assert c.check in ("ref_top", "ref_unclear"), where


def main() -> None:
    ds = Dataset(
        OUT,
        SEED,
        SNAPSHOTS,
        SHORT,
        ALLOWED_TAGS,
        WS_SLUG,
        FILLERS,
        min_cases=80,
        max_snapshots=6,
        completion_count=True,
        extra_check=extra_check,
    )
    generate(ds)


if __name__ == "__main__":
    main()

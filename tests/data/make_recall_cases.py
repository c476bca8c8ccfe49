# ruff: noqa: E501
"""Generate ``tests/data/recall_cases.json``: a router-independent recall benchmark.

Each snapshot is a frozen list of a user's task Sessions at a given ``now``; each case is
a new user request plus the Session it should be routed to (``existing``), ``new`` (the user
explicitly asked for a new task) or ``clarify`` (ambiguous, or nothing eligible matches).

The content is written by hand from what real users do; only filler sessions, timestamps and
repetitive log lines are drawn from a seeded RNG, so the output is byte-for-byte deterministic.

Before writing, the generator recomputes the eligible ordering of every snapshot (not archived,
no role, no subagent parent, no ``mode:side_conversation`` label; ordered by
``last_message_at ?? status_updated_at ?? created_at`` descending; first 32 are candidates)
and asserts that every expectation is consistent with it. The machinery (specs, building,
verification, writing) is shared with ``make_recall_cases_fresh.py`` in ``recall_kit.py``.

Run: ``.venv/bin/python tests/data/make_recall_cases.py``
"""

from __future__ import annotations

import random
from datetime import datetime
from pathlib import Path

from recall_kit import (
    BASE_TAGS,
    SIDE_LABEL,
    Case,
    Dataset,
    Filler,
    Spec,
    ago,
    chunk,
    generate,
    per_line,
)

SEED = 20261201
OUT = Path(__file__).with_name("recall_cases.json")

ALLOWED_TAGS = BASE_TAGS

WS_SLUG = {
    "个人": "personal",
    "家庭": "family",
    "招聘": "hiring",
    "产品": "product",
    "运营": "ops",
    "客服": "cs",
    "数据": "data",
}

# --------------------------------------------------------------------------------------
# Filler pool: (workspace, name, summary | None, messages)
# --------------------------------------------------------------------------------------

FILLERS: list[Filler] = [
    # --- tech / English-leaning ---
    (
        "infra",
        "Terraform state 拆分",
        "把单个 terraform state 按环境拆成多个，降低 plan 时间。",
        [
            ("user", "terraform plan 现在要跑 6 分钟，能不能按环境拆 state？"),
            (
                "assistant",
                "可以，建议按 env/ 目录拆成 dev、prod 两个 backend。我先列出需要 terraform state mv 的 43 个资源。",
            ),
            ("user", "先拆 dev，prod 下周再动"),
        ],
    ),
    (
        "infra",
        "Upgrade ingress-nginx",
        "Upgrade the ingress-nginx controller from 1.9 to 1.11 on all clusters.",
        [
            ("user", "Can we upgrade ingress-nginx this week? 1.9 is EOL."),
            (
                "assistant",
                "Yes. The main breaking change is allow-snippet-annotations defaulting to false; 6 Ingress objects use snippets, I'll list them.",
            ),
        ],
    ),
    (
        "infra",
        "Batch pool autoscaling",
        "Tune cluster-autoscaler for the batch pool; scale-down takes 40+ minutes.",
        [
            ("user", "The batch pool never scales down after the nightly jobs."),
            (
                "assistant",
                "scale-down-unneeded-time is 30m and two DaemonSet pods block eviction. Suggest 10m and adding the safe-to-evict annotation.",
            ),
        ],
    ),
    (
        "infra",
        "日志保留策略",
        "Loki 日志保留从 30 天调整为 14 天，冷数据转存 S3。",
        [
            ("user", "Loki 存储涨太快了，保留期缩短到 14 天吧"),
            (
                "assistant",
                "好的，compactor 的 retention_period 改为 336h，另外建议把 30 天内的审计日志单独导出到 S3。",
            ),
        ],
    ),
    (
        "infra",
        "Backup restore drill",
        "Quarterly restore drill for Postgres backups; target RTO is 1 hour.",
        [
            ("user", "Let's do the quarterly restore drill on Thursday."),
            (
                "assistant",
                "Plan: restore last night's base backup + WAL to a scratch instance, run the checksum script, time each step. Last quarter took 1h40m.",
            ),
        ],
    ),
    (
        "infra",
        "DNS 迁移到 Route 53",
        None,
        [
            ("user", "把内部域名从自建 bind 迁到 Route 53"),
            (
                "assistant",
                "先导出 zone 文件，TTL 提前一天降到 60s，切 NS 之后观察 48 小时再下线 bind。",
            ),
        ],
    ),
    (
        "infra",
        "AWS cost report",
        "Monthly AWS cost breakdown; EC2 is up 18% month over month.",
        [
            ("user", "Why did the AWS bill jump this month?"),
            (
                "assistant",
                "Mostly EC2: the data team's r6i.8xlarge instances ran 24/7 since the 9th. Savings Plans coverage dropped to 61%.",
            ),
        ],
    ),
    (
        "infra",
        "Kubernetes 1.30 升级",
        "集群从 1.28 升级到 1.30，需先处理废弃的 API。",
        [
            ("user", "EKS 1.28 的标准支持要到期了，准备升级"),
            (
                "assistant",
                "先用 pluto 扫一下废弃 API：有 3 个 flowcontrol v1beta2 的对象需要改。建议 1.29、1.30 两步升。",
            ),
        ],
    ),
    (
        "infra",
        "Bastion host 下线",
        "用 SSM Session Manager 替代跳板机。",
        [
            ("user", "跳板机能下线了吗？"),
            (
                "assistant",
                "还有 4 个同事在用 ssh 隧道连数据库，需要先给他们配好 SSM port forwarding。",
            ),
        ],
    ),
    (
        "infra",
        "证书自动续期",
        "用 cert-manager 替换手工续期的内部证书。",
        [
            ("user", "内部域名的证书每次都是手动续，太容易忘了"),
            (
                "assistant",
                "可以用 cert-manager + DNS01 自动续期，ClusterIssuer 指向我们的 ACME 账号即可。",
            ),
        ],
    ),
    (
        "infra",
        "Spot instance strategy",
        "Move stateless workers to Spot with a 30% on-demand base.",
        [
            ("user", "How much would we save moving the workers to Spot?"),
            (
                "assistant",
                "Roughly 55% on that node group. Keep a 30% on-demand base and diversify across 4 instance types to limit interruptions.",
            ),
        ],
    ),
    (
        "platform",
        "Rate limiter design",
        "Token-bucket rate limiter in the API gateway with per-tenant limits.",
        [
            ("user", "Design a per-tenant rate limiter for the gateway."),
            (
                "assistant",
                "Token bucket per (tenant, route class), state in the gateway's shared memory zone, 429 with Retry-After. Burst = 2x rate.",
            ),
        ],
    ),
    (
        "platform",
        "gRPC deadline propagation",
        "Make sure deadlines propagate across internal gRPC hops.",
        [
            ("user", "Some gRPC calls hang for minutes even though the client gave up."),
            (
                "assistant",
                "The inventory service creates a fresh context for downstream calls, dropping the deadline. Passing ctx through fixes it.",
            ),
        ],
    ),
    (
        "platform",
        "Feature flag cleanup",
        "Remove 37 stale feature flags older than 6 months.",
        [
            ("user", "List the flags we can delete."),
            (
                "assistant",
                "37 flags have been 100% on for 6+ months. I grouped them by owner; 12 belong to the checkout team.",
            ),
        ],
    ),
    (
        "platform",
        "Service catalog in Backstage",
        "Register all services in Backstage with owners and runbooks.",
        [
            ("user", "How many services are missing catalog-info.yaml?"),
            (
                "assistant",
                "29 of 84 repos. I can open PRs with a template that fills owner from CODEOWNERS.",
            ),
        ],
    ),
    (
        "platform",
        "OpenTelemetry tracing rollout",
        "Roll out OTel tracing to the Go services, 10% sampling.",
        [
            ("user", "Start with the Go services for tracing."),
            (
                "assistant",
                "Added otelhttp and otelgrpc middleware to the shared library; head sampling 10%, errors always sampled.",
            ),
        ],
    ),
    (
        "platform",
        "Deprecate v1 API",
        "Plan the sunset of the v1 public API by end of Q2.",
        [
            ("user", "Who still calls the v1 API?"),
            (
                "assistant",
                "14 tenants in the last 30 days; 3 of them account for 92% of calls. Draft sunset email is ready.",
            ),
        ],
    ),
    (
        "web",
        "Table virtualization",
        "The orders table lags with 5k rows; switch to a virtualized list.",
        [
            ("user", "The orders table freezes when a customer has thousands of rows."),
            (
                "assistant",
                "Rendering 5k rows x 12 cells. Switching to @tanstack/react-virtual brings the initial render from 2.1s to 90ms.",
            ),
        ],
    ),
    (
        "web",
        "i18n 文案补全",
        "补全日语和韩语缺失的 120 条文案。",
        [
            ("user", "日语和韩语还有多少文案没翻？"),
            ("assistant", "ja 缺 74 条，ko 缺 46 条，主要在设置页和账单页。我先导出成表格给翻译。"),
        ],
    ),
    (
        "web",
        "Lighthouse score",
        "Raise the mobile Lighthouse performance score from 62 to 85.",
        [
            ("user", "Our mobile Lighthouse score is 62. What are the quick wins?"),
            (
                "assistant",
                "LCP image not preloaded, 380KB of unused JS from the chart library, and fonts blocking render. Those three should get us past 80.",
            ),
        ],
    ),
    (
        "web",
        "Storybook 升级",
        None,
        [
            ("user", "Storybook 从 7 升到 8"),
            (
                "assistant",
                "跑了 automigrate，剩下 11 个 story 用了旧的 storiesOf 写法，需要手动改成 CSF3。",
            ),
        ],
    ),
    (
        "web",
        "CSP header rollout",
        "Roll out Content-Security-Policy in report-only mode first.",
        [
            ("user", "Let's add a CSP without breaking anything."),
            (
                "assistant",
                "Start with Content-Security-Policy-Report-Only and a report endpoint; after a week we whitelist what's legit and enforce.",
            ),
        ],
    ),
    (
        "web",
        "Design tokens sync",
        "Sync Figma design tokens into the web theme package.",
        [
            ("user", "The button colors in code drifted from Figma again."),
            (
                "assistant",
                "I'll export tokens with the Tokens Studio JSON and generate CSS variables in the theme package on each release.",
            ),
        ],
    ),
    (
        "mobile",
        "iOS push 证书",
        "APNs 证书明年 1 月过期，改用 token-based auth。",
        [
            ("user", "APNs 证书快过期了"),
            ("assistant", "建议直接切到 .p8 token 认证，不用每年续。推送服务端需要改成 JWT 签名。"),
        ],
    ),
    (
        "mobile",
        "Dark mode polish",
        "Fix contrast issues in dark mode on the settings and profile screens.",
        [
            ("user", "Dark mode text is hard to read in settings."),
            (
                "assistant",
                "Secondary text uses #8E8E93 on #1C1C1E (contrast 3.9:1). Switching to the semantic secondaryLabel color fixes it.",
            ),
        ],
    ),
    (
        "mobile",
        "Crash on Android 14 camera",
        "Crash when opening the camera on some Android 14 Samsung devices.",
        [
            ("user", "Crashlytics shows a spike of camera crashes on Galaxy S23."),
            (
                "assistant",
                "It's a SecurityException: the FOREGROUND_SERVICE_CAMERA permission is missing for Android 14 targets. Adding it to the manifest.",
            ),
        ],
    ),
    (
        "mobile",
        "启动速度优化",
        "冷启动从 2.8s 降到 1.9s 的方案，主要是延迟初始化 SDK。",
        [
            ("user", "冷启动太慢了，有什么办法"),
            (
                "assistant",
                "启动时同步初始化了 7 个 SDK，其中 4 个可以延迟到首页渲染后。预计能省 0.9s。",
            ),
        ],
    ),
    (
        "mobile",
        "App review replies",
        "Reply to recent 1-2 star App Store reviews.",
        [
            ("user", "Draft replies for this week's 1-star reviews."),
            (
                "assistant",
                "9 reviews; 5 are about the login loop fixed in 4.7.2. Drafted short replies pointing to the update.",
            ),
        ],
    ),
    (
        "mobile",
        "Flutter 3.24 升级",
        "Flutter 从 3.19 升到 3.24，处理 Material 3 默认值变化。",
        [
            ("user", "升级 Flutter 之后按钮样式全变了"),
            (
                "assistant",
                "3.24 默认 useMaterial3=true。可以先在 ThemeData 里显式设为 false，再逐页迁移。",
            ),
        ],
    ),
    (
        "data",
        "dbt model refactor",
        "Split fct_orders into incremental models to cut build time.",
        [
            ("user", "dbt build takes 50 minutes now."),
            (
                "assistant",
                "fct_orders is a full refresh over 3 years of data. Making it incremental on updated_at should cut it to ~8 minutes.",
            ),
        ],
    ),
    (
        "data",
        "留存看板",
        "搭建新用户 7 日/30 日留存看板。",
        [
            ("user", "做一个新用户留存看板，按渠道拆"),
            (
                "assistant",
                "留存口径用注册日 cohort，7 日和 30 日两条线，渠道维度取首次归因。SQL 写好了，先跑一周数据验证。",
            ),
        ],
    ),
    (
        "data",
        "Airflow DAG 超时",
        "每日 ETL DAG 在 03:00 左右超时，怀疑上游表延迟。",
        [
            ("user", "daily_etl 这周三次超时了"),
            (
                "assistant",
                "超时都卡在 wait_for_orders 这个 sensor，上游表最近 02:50 之后才落地。建议把 sensor 超时从 1h 调到 2h 并加告警。",
            ),
        ],
    ),
    (
        "data",
        "Churn model features",
        "Add support-ticket features to the churn model.",
        [
            ("user", "Can we use support tickets as churn signals?"),
            (
                "assistant",
                "Yes: tickets in last 30d, share of unresolved, and median first-response time. AUC went from 0.78 to 0.81 offline.",
            ),
        ],
    ),
    (
        "data",
        "Snowflake cost spike",
        "Warehouse credits doubled after the new BI dashboards.",
        [
            ("user", "Snowflake credits doubled this week."),
            (
                "assistant",
                "The new BI dashboards refresh every 5 minutes on an XL warehouse. Moving them to a Small warehouse with 1h refresh saves ~70%.",
            ),
        ],
    ),
    (
        "data",
        "Data retention policy (GDPR)",
        "Define retention periods for raw event data under GDPR.",
        [
            ("user", "How long can we keep raw clickstream data?"),
            (
                "assistant",
                "Suggest 13 months for raw events, aggregated tables indefinitely. Need legal to confirm before we add the deletion job.",
            ),
        ],
    ),
    (
        "security",
        "SOC 2 evidence collection",
        "Collect evidence for SOC 2 Type II controls before the audit window.",
        [
            ("user", "What evidence is still missing for SOC 2?"),
            (
                "assistant",
                "Access reviews for Q3, the vendor risk assessments for 4 vendors, and screenshots of the backup monitoring alerts.",
            ),
        ],
    ),
    (
        "security",
        "依赖漏洞升级",
        "升级 lodash、axios 等存在 CVE 的依赖。",
        [
            ("user", "Dependabot 报了 23 个高危漏洞"),
            (
                "assistant",
                "去重后其实是 6 个包，lodash 和 axios 可以直接升小版本，xml2js 需要改调用方式。",
            ),
        ],
    ),
    (
        "security",
        "SSO for internal tools",
        "Put the remaining internal tools behind Okta SSO.",
        [
            ("user", "Which internal tools still use shared passwords?"),
            (
                "assistant",
                "The admin panel, the feature-flag UI and the old Jenkins. All three support OIDC, so Okta SSO is straightforward.",
            ),
        ],
    ),
    (
        "security",
        "Pen test findings",
        "Track fixes for the external pen test findings (2 high, 5 medium).",
        [
            ("user", "Summarize the pen test report."),
            (
                "assistant",
                "2 high: IDOR on /api/invoices/:id and missing rate limit on password reset. 5 medium, mostly headers and cookie flags.",
            ),
        ],
    ),
    (
        "billing",
        "Tax rate update for EU",
        "Update VAT rates for EU countries effective Jan 1.",
        [
            ("user", "Which EU VAT rates change on Jan 1?"),
            (
                "assistant",
                "Estonia goes to 24% and Slovakia's standard rate changed earlier this year; I'll update the tax table and add a test per country.",
            ),
        ],
    ),
    (
        "billing",
        "Proration logic review",
        "Review proration when customers downgrade mid-cycle.",
        [
            ("user", "Customers complain about weird credits after downgrading."),
            (
                "assistant",
                "We prorate to the second but round each line item separately, so credits can be off by a few cents. Rounding at the invoice level fixes it.",
            ),
        ],
    ),
    (
        "billing",
        "Dunning emails",
        "Retry schedule and copy for failed-payment emails.",
        [
            ("user", "Rewrite the failed-payment emails; they sound threatening."),
            (
                "assistant",
                "New schedule: day 0, 3, 7, 14. Softer copy with a one-click update-card link. Drafts attached below.",
            ),
        ],
    ),
    (
        "billing",
        "发票抬头批量修改",
        "客户要求批量修改 2026 年的发票抬头，需财务确认。",
        [
            ("user", "有个客户要把今年 40 多张发票的抬头都改掉"),
            ("assistant", "已开具的电子发票只能红冲重开。我先整理清单，财务确认后批量操作。"),
        ],
    ),
    (
        "growth",
        "SEO keyword research",
        "Keyword research for the comparison landing pages.",
        [
            ("user", "Find keywords for 'X vs Y' comparison pages."),
            (
                "assistant",
                "Top 20 comparison queries by volume; 7 have low difficulty. I'd start with the three where we already rank on page 2.",
            ),
        ],
    ),
    (
        "growth",
        "Referral program v2",
        "Design double-sided referral rewards.",
        [
            ("user", "Make the referral program double-sided."),
            (
                "assistant",
                "Referrer gets one free month, referee gets 20% off for 3 months. Fraud check: reward only after the first paid invoice.",
            ),
        ],
    ),
    (
        "growth",
        "Landing page copy",
        "Rewrite the homepage hero copy for the SMB segment.",
        [
            ("user", "The hero copy is too enterprise-y."),
            (
                "assistant",
                "Three options focused on time saved; option 2 is the shortest: 'Close your books in a day, not a week.'",
            ),
        ],
    ),
    (
        "hiring",
        "Interview loop for Staff PM",
        "Design the interview loop for the Staff PM role.",
        [
            ("user", "Design the Staff PM loop."),
            (
                "assistant",
                "Five interviews: product sense, execution, data, leadership, and a cross-functional panel with eng and design.",
            ),
        ],
    ),
    (
        "hiring",
        "Referral bonus policy",
        "Draft the updated referral bonus policy for engineering roles.",
        [
            ("user", "Update the referral bonus policy."),
            (
                "assistant",
                "Draft: $3k for IC roles, $5k for staff+, paid after 90 days. Contractors excluded.",
            ),
        ],
    ),
    (
        "personal",
        "Gym routine",
        "Three-day full-body routine around a busy schedule.",
        [
            ("user", "I can only train Mon/Wed/Fri mornings."),
            (
                "assistant",
                "Full-body A/B alternating: squat, bench, row / deadlift, overhead press, pull-ups. 45 minutes each.",
            ),
        ],
    ),
    (
        "personal",
        "Car maintenance",
        None,
        [
            ("user", "When is the car due for service?"),
            (
                "assistant",
                "At 30,000 km, about 1,200 km from now: oil, cabin filter and brake fluid.",
            ),
        ],
    ),
    (
        "personal",
        "Apartment lease renewal",
        "Decide whether to renew the lease at +6% or move in March.",
        [
            ("user", "Landlord wants +6% on renewal."),
            (
                "assistant",
                "Comparable 2-bedrooms nearby are listed ~4% higher than your current rent; moving costs would eat about 5 months of the difference.",
            ),
        ],
    ),
    (
        "growth",
        "Webinar funnel",
        "Registration-to-attendance funnel for the monthly product webinar.",
        [
            ("user", "Only 22% of webinar registrants show up."),
            (
                "assistant",
                "Add a calendar invite at signup and reminders at 24h and 1h; industry benchmark is 35-40%.",
            ),
        ],
    ),
    (
        "web",
        "Upgrade to React 19",
        "Upgrade the web app to React 19; forwardRef and act() changes.",
        [
            ("user", "Can we move to React 19?"),
            (
                "assistant",
                "Blockers: two libraries still rely on string refs, and the test setup imports act from react-dom/test-utils. Both have fixes upstream.",
            ),
        ],
    ),
    (
        "personal",
        "Tax filing prep",
        "Collect documents for personal tax filing: 1099s, receipts.",
        [
            ("user", "What do I need for taxes this year?"),
            (
                "assistant",
                "W-2, two 1099-INT, the 1099-B from the brokerage, and receipts for the home office deduction.",
            ),
        ],
    ),
    # --- Chinese work / life ---
    (
        "个人",
        "读书清单",
        "整理 2027 年想读的 20 本书。",
        [
            ("user", "帮我列一个明年的读书清单，经济和历史为主"),
            ("assistant", "初步列了 20 本，经济 8 本、历史 9 本、其他 3 本，按难度排了顺序。"),
        ],
    ),
    (
        "个人",
        "家里宽带续费",
        "电信宽带 12 月到期，比较续费和换联通。",
        [
            ("user", "宽带要到期了，续费还是换一家？"),
            (
                "assistant",
                "电信续费 1200/年 500M，联通新装 960/年 1000M 但要 299 安装费。算下来第二年起联通更划算。",
            ),
        ],
    ),
    (
        "个人",
        "体检预约",
        "预约 12 月中旬的年度体检。",
        [
            ("user", "帮我约一下年度体检，加个胃镜"),
            (
                "assistant",
                "公司套餐可以加无痛胃镜，12 月 16 日和 18 日上午有号，需要提前一天禁食。",
            ),
        ],
    ),
    (
        "个人",
        "学英语计划",
        "每天 30 分钟听力 + 每周两次口语课。",
        [
            ("user", "想把英语口语练起来"),
            (
                "assistant",
                "建议每天 30 分钟播客精听，每周二、四晚上各一节 45 分钟口语课，每月录一次自我介绍对比进步。",
            ),
        ],
    ),
    (
        "个人",
        "装修报价对比",
        "对比三家装修公司的报价，重点看水电改造。",
        [
            ("user", "三家装修报价差了快 5 万"),
            (
                "assistant",
                "主要差在水电改造：A 家按实际米数结算，B、C 是打包价。建议要求 A 给出上限。",
            ),
        ],
    ),
    (
        "个人",
        "信用卡账单核对",
        None,
        [
            ("user", "这个月信用卡多了一笔 399 的扣款"),
            (
                "assistant",
                "是某视频会员的自动续费，上个月开的试用。可以在 App 里关闭自动续费并申请退款。",
            ),
        ],
    ),
    (
        "个人",
        "手机换新对比",
        "在两款旗舰手机之间做选择，看重拍照和续航。",
        [
            ("user", "纠结换哪个手机，主要拍娃"),
            ("assistant", "拍运动中的小孩，A 的对焦和连拍更稳；续航 B 好一点。综合推荐 A。"),
        ],
    ),
    (
        "个人",
        "周末跑步计划",
        "准备明年 4 月的半马，周末长距离慢跑。",
        [
            ("user", "明年 4 月想跑个半马"),
            (
                "assistant",
                "16 周计划：每周 3 跑，周末长距离从 8km 逐步加到 18km，配速先控制在 6:30。",
            ),
        ],
    ),
    (
        "家庭",
        "孩子兴趣班",
        "比较编程课和围棋课，周六上午二选一。",
        [
            ("user", "孩子想学编程也想学围棋，周六上午只能选一个"),
            (
                "assistant",
                "编程课 8 岁起效果更好，围棋现在学正合适。可以先报围棋，暑假再上编程集训。",
            ),
        ],
    ),
    (
        "家庭",
        "父母医保报销",
        "整理父母异地就医的报销材料。",
        [
            ("user", "我爸在外地住院，医保怎么报"),
            (
                "assistant",
                "先在国家医保服务平台做异地就医备案，出院时可以直接结算；没备案的话需要带发票和清单回参保地报销。",
            ),
        ],
    ),
    (
        "家庭",
        "家庭保险梳理",
        "梳理全家现有保单，查缺补漏。",
        [
            ("user", "帮我看下家里的保险还缺什么"),
            ("assistant", "现在有重疾和医疗，缺定期寿险。按房贷余额，建议主收入人配 200 万保额。"),
        ],
    ),
    (
        "招聘",
        "JD 优化：SRE",
        "重写 SRE 岗位 JD，突出 on-call 补贴和技术栈。",
        [
            ("user", "SRE 的 JD 投递太少，帮我改改"),
            (
                "assistant",
                "改了三处：标题加上 Kubernetes、写明 on-call 补贴、删掉不必要的学历要求。",
            ),
        ],
    ),
    (
        "招聘",
        "校招宣讲 PPT",
        "准备 12 月校招宣讲的 PPT，20 页以内。",
        [
            ("user", "帮我搭一下校招宣讲 PPT 的框架"),
            (
                "assistant",
                "公司介绍 3 页、技术挑战 5 页、成长路径 4 页、福利 3 页、Q&A 1 页，共 16 页。",
            ),
        ],
    ),
    (
        "招聘",
        "面试题库整理",
        "整理后端面试题库，按难度分级。",
        [
            ("user", "整理一下后端面试题，分初中高"),
            (
                "assistant",
                "共 60 题：初级 20（基础与 SQL）、中级 25（系统设计片段）、高级 15（开放性架构题）。",
            ),
        ],
    ),
    (
        "招聘",
        "猎头合同续签",
        "和两家猎头续签明年的合同，费率谈到 18%。",
        [
            ("user", "猎头合同明年到期，费率能谈吗"),
            (
                "assistant",
                "市场价 20% 左右，按今年的成单量可以争取 18%，保证期从 3 个月延长到 6 个月。",
            ),
        ],
    ),
    (
        "招聘",
        "实习生转正评估",
        "三位实习生的转正答辩安排和评估表。",
        [
            ("user", "实习生转正答辩放在哪天"),
            (
                "assistant",
                "建议 12 月第三周，每人 30 分钟：15 分钟项目汇报 + 15 分钟提问，评估表已按四个维度准备。",
            ),
        ],
    ),
    (
        "产品",
        "竞品分析：Notion AI",
        "对比 Notion AI 与我们的知识库问答体验。",
        [
            ("user", "做个 Notion AI 的竞品分析"),
            (
                "assistant",
                "从检索准确率、引用展示、权限控制三个维度对比，我们在权限上有优势，引用展示落后。",
            ),
        ],
    ),
    (
        "产品",
        "用户访谈纪要",
        "整理 6 位中小企业用户的访谈纪要，提炼核心痛点。",
        [
            ("user", "把这周 6 个访谈的纪要整理一下"),
            ("assistant", "提炼出 3 个痛点：数据导入太麻烦、权限设置看不懂、手机端查看不方便。"),
        ],
    ),
    (
        "产品",
        "PRD：批量导出",
        "批量导出功能的 PRD，支持 CSV 和 Excel。",
        [
            ("user", "写一下批量导出的 PRD"),
            (
                "assistant",
                "范围：列表页勾选导出，超过 1 万行走异步任务并发站内信。格式支持 CSV 和 xlsx。",
            ),
        ],
    ),
    (
        "产品",
        "会员体系设计",
        "设计三档会员权益和升级规则。",
        [
            ("user", "会员分几档比较合适"),
            ("assistant", "建议三档：基础、专业、团队。升级按席位和功能区分，不按存储量。"),
        ],
    ),
    (
        "产品",
        "需求池梳理",
        "把需求池 140 条按 RICE 打分排序。",
        [
            ("user", "需求池太乱了，帮我排个优先级"),
            ("assistant", "用 RICE 打分，前 15 条里有 6 条来自大客户，建议下个迭代先做其中 4 条。"),
        ],
    ),
    (
        "运营",
        "社群活动策划",
        "12 月社群线上分享活动策划，邀请 2 位嘉宾。",
        [
            ("user", "12 月的社群分享做什么主题"),
            (
                "assistant",
                "建议主题“年终复盘怎么做”，邀请一位客户和一位内部 PM 分享，周四晚 8 点。",
            ),
        ],
    ),
    (
        "运营",
        "公众号排期",
        "12 月公众号文章排期，每周 2 篇。",
        [
            ("user", "排一下 12 月公众号"),
            ("assistant", "每周二、五各一篇：2 篇案例、3 篇教程、2 篇行业观察、1 篇年终盘点。"),
        ],
    ),
    (
        "运营",
        "直播带货脚本",
        "下周三直播带货脚本，主推保温杯。",
        [
            ("user", "写个直播脚本，主推保温杯"),
            ("assistant", "60 分钟节奏：开场福袋 5 分钟，保温杯讲解 3 轮，每轮配一次限时秒杀。"),
        ],
    ),
    (
        "运营",
        "小红书投放复盘",
        "复盘 11 月小红书达人投放，CPE 偏高。",
        [
            ("user", "小红书投放效果怎么样"),
            ("assistant", "共 18 篇笔记，CPE 4.2 元，高于预期的 3 元；腰部达人效果明显好于头部。"),
        ],
    ),
    (
        "运营",
        "年货节选品",
        "年货节选品清单，控制在 50 个 SKU 以内。",
        [
            ("user", "年货节选哪些品"),
            ("assistant", "按去年销量和毛利筛了 48 个 SKU，礼盒类占 60%。"),
        ],
    ),
    (
        "客服",
        "客服话术更新",
        "更新售后相关的客服话术模板。",
        [
            ("user", "售后话术太生硬了，改一下"),
            ("assistant", "改了 12 条，开头统一先致歉再给方案，结尾加上预计处理时间。"),
        ],
    ),
    (
        "客服",
        "差评回访",
        "对 11 月的 37 条差评做电话回访。",
        [
            ("user", "11 月的差评安排回访"),
            ("assistant", "37 条差评里 21 条是物流慢，已按地区分给 3 位客服，每人每天回访 5 条。"),
        ],
    ),
    (
        "数据",
        "GMV 日报自动化",
        "每天 9 点自动推送 GMV 日报到群里。",
        [
            ("user", "GMV 日报每天手动发太麻烦"),
            ("assistant", "写了个定时任务，每天 9:00 取前一天数据生成图表推送到飞书群。"),
        ],
    ),
    (
        "数据",
        "用户画像标签",
        "梳理用户画像标签体系，先做 30 个基础标签。",
        [
            ("user", "用户画像标签先做哪些"),
            ("assistant", "先做 30 个：人口属性 8 个、消费能力 10 个、品类偏好 12 个。"),
        ],
    ),
    (
        "招聘",
        "薪酬带宽调研",
        "调研 P6-P7 后端岗位的市场薪酬带宽。",
        [
            ("user", "后端 P6、P7 的市场薪酬大概什么水平"),
            (
                "assistant",
                "按三份薪酬报告的中位数：P6 总包 45-60 万，P7 65-85 万，一线城市上浮 10%。",
            ),
        ],
    ),
    (
        "产品",
        "新手引导改版",
        "重做新手引导，从 6 步减少到 3 步。",
        [
            ("user", "新手引导流失太多了"),
            (
                "assistant",
                "第 3 步“导入数据”流失 41%。建议把导入挪到引导之后，引导只保留建项目、邀请成员、看示例三步。",
            ),
        ],
    ),
    (
        "运营",
        "会员日活动",
        "每月 18 日会员日活动方案。",
        [
            ("user", "会员日搞点什么"),
            (
                "assistant",
                "每月 18 日：会员专享价 + 积分双倍 + 前 100 名赠品，预算控制在 2 万以内。",
            ),
        ],
    ),
    (
        "客服",
        "客服排班",
        "春节期间客服排班，保证 9-21 点在线。",
        [
            ("user", "春节客服怎么排班"),
            (
                "assistant",
                "8 位客服分两组轮休，每天 9:00-21:00 至少 3 人在线，除夕和初一安排加班费。",
            ),
        ],
    ),
    (
        "数据",
        "A/B 实验平台选型",
        "比较自建与第三方 A/B 实验平台。",
        [
            ("user", "实验平台自建还是买"),
            (
                "assistant",
                "当前每月 10 个实验以内，第三方更划算；超过 30 个再考虑自建，主要成本在指标口径治理。",
            ),
        ],
    ),
    (
        "家庭",
        "家务分工表",
        "和家人重新分配每周家务。",
        [
            ("user", "帮我做个家务分工表"),
            (
                "assistant",
                "按工作日/周末拆开：工作日做饭和洗碗轮换，周末大扫除一起做，孩子负责整理自己的玩具。",
            ),
        ],
    ),
    (
        "客服",
        "退款时效优化",
        "把退款平均处理时长从 48 小时降到 24 小时。",
        [
            ("user", "退款处理太慢被投诉了"),
            (
                "assistant",
                "卡在人工审核环节。小于 100 元且非高风险用户可以自动通过，预计覆盖 70% 的退款单。",
            ),
        ],
    ),
    (
        "billing",
        "供应商付款排期",
        "12 月供应商付款排期，优先账期到期的 8 家。",
        [
            ("user", "这个月哪些供应商要付款"),
            ("assistant", "账期到期的有 8 家，共 186 万，建议分两批，15 号和 28 号各付一批。"),
        ],
    ),
]

TECH_WS = {
    "infra",
    "platform",
    "web",
    "mobile",
    "data",
    "security",
    "billing",
    "growth",
    "hiring",
    "personal",
}


# --------------------------------------------------------------------------------------
# Log generators (seeded)
# --------------------------------------------------------------------------------------


def ci_postgres_log(rng: random.Random, buried: str, at_line: int, n: int) -> list[str]:
    lines = []
    attempt = 1
    sec = 13 * 60 + 5
    for i in range(n):
        sec += rng.randint(1, 4)
        ts = f"02:{sec // 60:02d}:{sec % 60:02d}"
        step = 12 + i // 12
        if i == at_line:
            lines.append(f"[build 8812] {ts} step 21/40 migrate: {buried}")
            continue
        kind = rng.random()
        if kind < 0.6:
            lines.append(
                f"[build 8812] {ts} step {step}/40 integration: waiting for postgres-ci:5432 "
                f"to accept connections... retrying (attempt {attempt}/300)"
            )
            attempt += 1
        elif kind < 0.85:
            lines.append(
                f"[build 8812] {ts} step {step}/40 integration: pg_isready -h postgres-ci -p 5432 -> no response"
            )
        else:
            lines.append(
                f"[build 8812] {ts} step {step}/40 integration: postgres-ci   Up {i // 20 + 1} minutes (health: starting)"
            )
    return lines


def gradle_log(rng: random.Random, buried: str, at_line: int, n: int) -> list[str]:
    artifacts = [
        "androidx/core/core/1.12.0/core-1.12.0.aar",
        "androidx/appcompat/appcompat/1.6.1/appcompat-1.6.1.aar",
        "com/google/android/material/material/1.11.0/material-1.11.0.aar",
        "androidx/lifecycle/lifecycle-runtime/2.7.0/lifecycle-runtime-2.7.0.aar",
        "org/jetbrains/kotlin/kotlin-stdlib/1.9.22/kotlin-stdlib-1.9.22.jar",
        "androidx/recyclerview/recyclerview/1.3.2/recyclerview-1.3.2.aar",
    ]
    tasks = [
        ":app:preBuild",
        ":app:mergeReleaseResources",
        ":app:checkReleaseAarMetadata",
        ":app:generateReleaseBuildConfig",
    ]
    lines = []
    for i in range(n):
        if i == at_line:
            lines.append(buried)
            continue
        if rng.random() < 0.7:
            art = rng.choice(artifacts)
            lines.append(
                f"Download https://dl.google.com/dl/android/maven2/{art}, took {rng.randint(40, 900)} ms"
            )
        else:
            lines.append(f"> Task {rng.choice(tasks)} UP-TO-DATE")
    return lines


def redis_retry_log(rng: random.Random, buried: str, at_line: int, n: int) -> list[str]:
    lines = []
    sec = 19 * 3600 + 2 * 60
    for i in range(n):
        sec += rng.randint(2, 4)
        ts = f"2026-12-01 {sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}"
        if i == at_line:
            lines.append(f"[cache-client] {ts} {buried}")
            continue
        backoff = min(2000, 100 * 2 ** min(i, 5))
        lines.append(
            f"[cache-client] {ts} retrying connection to redis-staging-2.internal:6379 "
            f"(attempt {i + 1}, backoff {backoff}ms)... ETIMEDOUT"
        )
    return lines


def kafka_lag_log(rng: random.Random, buried: str, at_line: int, n: int) -> list[str]:
    lines = []
    sec = 17 * 3600 + 50 * 60
    lag = 310_000
    for i in range(n):
        sec += rng.randint(5, 12)
        ts = f"{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}"
        if i == at_line:
            lines.append(f"{ts} WARN [Consumer clientId=etl-3, groupId=order-events-etl] {buried}")
            continue
        lag += rng.randint(2_000, 11_000)
        p = rng.randint(0, 11)
        lines.append(
            f"{ts} INFO lag-exporter consumer-group=order-events-etl topic=order-events "
            f"partition={p} lag={lag + p * 731} committed_offset={88_410_000 + i * 977}"
        )
    return lines


# --------------------------------------------------------------------------------------
# Snapshot 1: engineering team (infra / billing / mobile / web), busy Tuesday morning
# --------------------------------------------------------------------------------------


def snapshot_team(rng: random.Random):
    sid = "team-infra-2026-12-01"
    now = datetime.fromisoformat("2026-12-01T10:30:00+08:00")
    specs = [
        Spec(
            "okr",
            "Q1 OKR 草稿",
            "个人",
            ago(m=4),
            state="waiting_for_user",
            summary="起草个人 Q1 OKR：技术影响力、带新人、稳定性三个方向。",
            messages=[
                ("user", "帮我起草一下 Q1 的个人 OKR，三个方向：技术影响力、带新人、稳定性"),
                (
                    "assistant",
                    "O1 提升平台稳定性：KR1 核心服务 SLO 达到 99.95%；KR2 P1 事故不超过 1 次。O2 技术影响力：KR1 内部分享 2 次……",
                ),
                ("user", "KR 再量化一点，带新人那条写具体"),
                (
                    "assistant",
                    "已调整：O3 带新人：KR1 两位新人独立负责一个模块上线；KR2 每两周一次 1:1。你看下是否合适？",
                ),
            ],
        ),
        Spec(
            "handover",
            "On-call 交接",
            "infra",
            ago(m=7),
            summary="整理本周 on-call 交接：2 个未关闭告警、1 个进行中的变更。",
            messages=[
                ("user", "帮我整理一下这周的 on-call 交接文档"),
                (
                    "assistant",
                    "未关闭告警：磁盘 IO 抖动（db-3）、证书到期提醒；进行中变更：ingress 灰度 30%。",
                ),
                ("user", "补上下周值班人和升级联系人"),
            ],
        ),
        Spec(
            "fixbug_avatar",
            "Fix bug",
            "mobile",
            ago(h=2),
            state="waiting_for_user",
            summary="修复 App 登录后头像不显示的问题：CDN 签名 URL 有效期太短，已改为 24 小时，待发版验证。",
            messages=[
                ("user", "登录后头像有时候是灰的，帮我查下"),
                (
                    "assistant",
                    "头像 URL 带的 CDN 签名只有 10 分钟有效期，列表页把 URL 缓存了，过期后就加载失败。",
                ),
                ("user", "那就改成 24 小时"),
                ("assistant", "配置已改好，等下个版本发出去验证。"),
            ],
        ),
        Spec(
            "fixbug_invoice",
            "Fix bug (2)",
            "billing",
            ago(d=1, h=3),
            summary="Stripe webhook 重试时会重复发送发票邮件，计划用 event id 做幂等。",
            messages=[
                ("user", "Some customers got the same invoice email 3 times yesterday."),
                (
                    "assistant",
                    "Our invoice.paid handler took >10s to return 200, so the provider retried, and every retry re-sent the email.",
                ),
                ("user", "So we need idempotency here."),
                (
                    "assistant",
                    "Yes: persist the event id and skip duplicates. I'll draft the migration for a processed_events table.",
                ),
            ],
        ),
        Spec(
            "fixbug_sso",
            "Fix bug (3)",
            "web",
            ago(h=3, m=10),
            state="running",
            messages=[
                ("user", "SSO 用户登录后右上角显示 undefined"),
                (
                    "assistant",
                    "定位到 src/auth/profile.ts 里的 getUserName：SSO 用户没有 displayName 字段，fallback 写的是 user.name，但 IdP 返回的是 user.fullName。",
                ),
                ("user", "改成依次 fallback displayName → fullName → email 前缀"),
                ("assistant", "好的，正在改，并给 getUserName 补三个单测。"),
            ],
        ),
        Spec(
            "fixbug_safari",
            "Fix bug",
            "web",
            ago(d=5),
            archived=True,
            summary="Safari 上传大文件（>2GB）失败，改成分片上传。",
            messages=[
                ("user", "Safari 上传 2G 以上的文件直接失败"),
                ("assistant", "Safari 对单个 Blob 的 XHR 上传有限制，改成 8MB 分片上传可以绕过。"),
            ],
        ),
        Spec(
            "gateway",
            "API 网关偶发 502",
            "infra",
            ago(h=5),
            summary="排查 API 网关偶发 502，怀疑上游 keepalive 超时设置不一致。",
            messages=[
                ("user", "网关这两天偶发 502，大概千分之三"),
                (
                    "assistant",
                    "从网关 access log 看，502 都集中在 orders-svc 上游，错误是 upstream prematurely closed connection。",
                ),
                (
                    "tool",
                    "orders-svc pod logs (last 1h):\nError: read ERR_CONN_RESET at TCP.onStreamRead (node:internal/stream_base_commons:217:20)  x37",
                ),
                (
                    "assistant",
                    "orders-svc 那边是 ERR_CONN_RESET，和网关 keepalive_timeout 75s 大于 Node 默认 keepAliveTimeout 5s 吻合。建议把 server.keepAliveTimeout 调到 76s。",
                ),
                ("user", "先在一个 pod 上试"),
            ],
        ),
        Spec(
            "users_migration",
            "用户表迁移",
            "data",
            ago(d=1, h=5),
            state="blocked",
            summary="把 users 集合从旧 Mongo 集群迁到新集群，分三批进行，第二批卡住了。",
            messages=[
                ("user", "第一批迁完了，开始第二批"),
                ("assistant", "第二批 120 万条，预计 40 分钟。"),
                ("user", "第二批迁移失败了"),
                (
                    "tool",
                    'MongoBulkWriteError: E11000 duplicate key error collection: app.users index: email_1 dup key: { email: "li.na@example.com" }',
                ),
                (
                    "assistant",
                    "新集群上 email_1 是唯一索引，旧数据里有大小写不同的重复邮箱（Li.Na@ 和 li.na@）。建议先按 lower(email) 去重再迁。",
                ),
                ("user", "先别动数据，等我和产品确认怎么合并账号"),
            ],
        ),
        Spec(
            "review_4821",
            "Code review",
            "web",
            ago(h=6),
            state="waiting_for_user",
            summary="Reviewing a PR that adds per-tenant rate limiting to the export API.",
            messages=[
                ("user", "帮我 review 一下 PR #4821"),
                (
                    "assistant",
                    "PR #4821 给 /v2/export 加了按租户的限流。三个问题：1) 令牌桶参数写死在代码里；2) 缺少 429 的 Retry-After；3) 单测没覆盖并发。",
                ),
                ("user", "好的我去改"),
            ],
        ),
        Spec(
            "review_rsc",
            "Code review",
            "web",
            ago(d=2),
            summary="Reviewing the PR that migrates the settings page to React Server Components.",
            messages=[
                ("user", "Review PR #4790 please"),
                (
                    "assistant",
                    "PR #4790 moves the settings page to server components. The data fetching is fine, but the theme toggle now needs 'use client'.",
                ),
            ],
        ),
        Spec(
            "ci_ledger",
            "CI 失败排查",
            "infra",
            ago(m=50),
            state="running",
            summary="分析 nightly CI 失败的日志，定位是哪个步骤出错。",
            messages=[
                ("user", "nightly CI 又红了，帮我看看 build 8812 的日志"),
                *chunk(
                    ci_postgres_log(
                        rng,
                        'ERROR: relation "ledger_entries_v3" does not exist (SQLSTATE 42P01)',
                        97,
                        140,
                    ),
                    10,
                    2,
                ),
                ("assistant", "日志里绝大部分是等待 postgres-ci 的重试，我还在往后翻。", 60),
            ],
        ),
        Spec(
            "ci_lstar",
            "CI 失败排查 (2)",
            "infra",
            ago(d=1, h=2),
            state="waiting_for_user",
            summary="CI 上的构建失败但本地正常，正在看完整日志。",
            messages=[
                ("user", "This build fails on CI but works locally, can you go through the log?"),
                *chunk(
                    gradle_log(
                        rng,
                        "ERROR: /home/runner/work/app/app/src/main/res/values/styles.xml:4: AAPT: error: resource android:attr/lStar not found.",
                        63,
                        100,
                    ),
                    10,
                    2,
                ),
                ("assistant", "前半段都是依赖下载，我还没看完，先把日志存下了。", 90),
            ],
        ),
        Spec(
            "grafana_new",
            "调整 Grafana 告警阈值",
            "infra",
            ago(h=1, m=20),
            summary="CPU 和内存告警太吵，重新设置阈值和持续时间。",
            messages=[
                ("user", "CPU 告警一晚上响了 40 次，阈值改一下"),
                ("assistant", "建议 CPU > 85% 持续 10 分钟才告警，内存 > 90% 持续 5 分钟。"),
                ("user", "先按这个改"),
            ],
        ),
        Spec(
            "grafana_old",
            "调整 Grafana 告警阈值",
            "infra",
            ago(d=18),
            summary="磁盘使用率告警阈值已调到 85%，已上线。",
            messages=[
                ("user", "磁盘告警太早了，80% 就报"),
                (
                    "assistant",
                    "已把磁盘使用率阈值调到 85%，并加了 1 小时增长率的预测告警。已上线。",
                ),
                ("user", "好的，谢谢"),
            ],
        ),
    ]
    cases = [
        Case(
            "那个头像不显示的 bug 修得怎么样了？",
            "existing",
            ["similar_names"],
            "unique",
            target="fixbug_avatar",
            keys=("头像",),
            layer="summary",
        ),
        Case(
            "Stripe 重复发发票邮件那个，幂等就用 event id 做，继续吧",
            "existing",
            ["similar_names", "mixed_zh_en"],
            "unique",
            target="fixbug_invoice",
            keys=("Stripe", "发票"),
            layer="summary",
        ),
        Case(
            "getUserName for SSO users — is the fallback fix merged yet?",
            "existing",
            ["similar_names", "identifiers"],
            "unique",
            target="fixbug_sso",
            keys=("getUserName",),
            layer="evidence",
        ),
        Case("继续修那个 bug", "clarify", ["similar_names"], "ambiguous", keys=("fix bug",)),
        Case(
            "Safari 上传大文件失败那个 bug 接着弄",
            "clarify",
            ["ineligible", "similar_names"],
            "ineligible",
            keys=("Safari",),
        ),
        Case(
            "ERR_CONN_RESET 那个，keepAliveTimeout 改完之后还有吗？",
            "existing",
            ["identifiers", "mixed_zh_en"],
            "unique",
            target="gateway",
            keys=("ERR_CONN_RESET",),
            layer="evidence",
        ),
        Case(
            "E11000 on email_1 again — let's dedupe by lowercased email now",
            "existing",
            ["identifiers"],
            "unique",
            target="users_migration",
            keys=("E11000",),
            layer="evidence",
        ),
        Case(
            "Start a new task for the E11000 duplicate-email cleanup, separate from the migration.",
            "new",
            ["explicit_new", "identifiers"],
            "new_overlap",
            keys=("E11000",),
        ),
        Case(
            "PR #4821 的 review 意见我都改完了，再帮我看一遍",
            "existing",
            ["identifiers", "similar_names", "mixed_zh_en"],
            "unique",
            target="review_4821",
            keys=("#4821",),
            layer="evidence",
        ),
        Case(
            "settings 页面迁到 Server Components 的那个 PR，再看一下 theme toggle",
            "existing",
            ["similar_names", "mixed_zh_en"],
            "unique",
            target="review_rsc",
            keys=("Server Components",),
            layer="summary",
        ),
        Case(
            "ledger_entries_v3 不存在那个报错，是不是 migration 顺序的问题？",
            "existing",
            ["repetitive_logs", "identifiers", "similar_names", "mixed_zh_en"],
            "unique",
            target="ci_ledger",
            keys=("ledger_entries_v3",),
            layer="evidence",
        ),
        Case(
            "android:attr/lStar not found — is that a compileSdk mismatch? keep digging on that build failure",
            "existing",
            ["repetitive_logs", "identifiers", "similar_names"],
            "unique",
            target="ci_lstar",
            keys=("lStar",),
            layer="evidence",
        ),
        Case(
            "Grafana 告警阈值再调一下，CPU 那条还是太吵",
            "existing",
            ["recency", "mixed_zh_en"],
            "recency",
            target="grafana_new",
            other="grafana_old",
            keys=("Grafana",),
            layer="name",
        ),
        Case("接着刚才那个", "clarify", ["reference_only"], "ref_tie"),
        Case(
            "帮我查一下下周去成都的高铁票", "clarify", ["no_match"], "none", keys=("高铁", "成都")
        ),
        Case(
            "新建一个任务：调研一下 Kafka 迁移到 Pulsar 的成本",
            "new",
            ["explicit_new", "mixed_zh_en"],
            "none",
            keys=("Pulsar",),
        ),
        Case(
            "把 Q1 OKR 里带新人那条 KR 再改改",
            "existing",
            ["mixed_zh_en"],
            "unique",
            target="okr",
            keys=("OKR",),
            layer="name",
        ),
    ]
    fill = dict(
        n_today=6,
        n_week=7,
        n_old=15,
        today_min=ago(m=20),
        old_range=(ago(d=25), ago(d=90)),
        workspaces={"infra", "billing", "mobile", "web", "data", "security", "个人"},
    )
    return sid, now, specs, cases, fill


# --------------------------------------------------------------------------------------
# Snapshot 2: a Chinese-speaking product manager, Monday evening after a quiet weekend
# --------------------------------------------------------------------------------------


def snapshot_pm(rng: random.Random):
    sid = "personal-pm-2026-12-07"
    now = datetime.fromisoformat("2026-12-07T21:15:00+08:00")
    specs = [
        Spec(
            "book",
            "读书笔记：《置身事内》",
            "个人",
            ago(m=12),
            summary="整理《置身事内》第三章土地财政的读书笔记。",
            messages=[
                ("user", "帮我整理一下《置身事内》第三章的笔记，重点是土地财政"),
                (
                    "assistant",
                    "第三章核心：分税制后地方财政缺口→土地出让金→城投平台融资。我按“机制-后果-改革”三段整理了。",
                ),
                ("user", "加上书里那几个数据"),
                ("assistant", "已补充：土地出让收入占地方本级收入的比例、城投债规模变化。"),
            ],
        ),
        Spec(
            "release_app",
            "发布准备",
            "产品",
            ago(d=2, h=3),
            summary="App 3.2 版本发布准备：应用商店截图、更新说明文案、灰度比例。",
            messages=[
                ("user", "3.2 下周发，帮我列一下发布前要准备的东西"),
                (
                    "assistant",
                    "清单：1) 应用商店 5 张截图；2) 更新说明（中英）；3) 灰度 10%→50%→100%；4) 回滚预案。",
                ),
                ("user", "截图先用设计给的旧版"),
            ],
        ),
        Spec(
            "release_web",
            "发布准备 v2",
            "产品",
            ago(d=2, h=1),
            summary="官网改版上线前检查：SEO meta、旧链接 301 跳转、埋点校验。",
            messages=[
                ("user", "官网改版周四上线，检查清单列一下"),
                (
                    "assistant",
                    "SEO：title/description 全部页面覆盖；旧链接 301 跳转表 86 条；埋点：注册和试用按钮两个关键事件。",
                ),
            ],
        ),
        Spec(
            "cand_fe",
            "候选人跟进",
            "招聘",
            ago(d=3),
            summary="前端工程师候选人王磊已过终面，正在谈 offer。",
            messages=[
                ("user", "王磊终面过了，准备 offer"),
                ("assistant", "建议 base 在预算区间中位，签字费可以作为谈判筹码。他期望涨幅 30%。"),
            ],
        ),
        Spec(
            "cand_da",
            "候选人跟进 2",
            "招聘",
            ago(d=4),
            state="waiting_for_user",
            summary="数据分析岗候选人陈晨，笔试已发，等待提交。",
            messages=[
                ("user", "给陈晨发数据分析的笔试题"),
                ("assistant", "已准备 3 道 SQL + 1 道业务分析题，限时 48 小时。"),
            ],
        ),
        Spec(
            "refund_0042",
            "退货退款",
            "个人",
            ago(d=2, h=5),
            state="waiting_for_user",
            summary="跟进一个网购退货退款，卖家还没处理。",
            messages=[
                ("user", "有个退货卖家一直不处理，订单号 20261130-0042，空气净化器"),
                (
                    "assistant",
                    "退货单显示卖家已签收 3 天。按平台规则签收 48 小时内未处理可以申请平台介入，我帮你写了介入申请。",
                ),
                ("user", "先等到周二，还不退就申请介入"),
            ],
        ),
        Spec(
            "refund_0917",
            "退货",
            "个人",
            ago(d=5),
            summary="跟进一个网购退货，快递已寄回。",
            messages=[
                ("user", "订单号 20261118-0917 的羽绒服尺码不对，要退"),
                ("assistant", "已申请退货，上门取件约在明天上午，运费险可以覆盖。"),
            ],
        ),
        Spec(
            "weekend",
            "周末安排",
            "家庭",
            ago(d=1, h=22),
            summary="计划周六带孩子去科技馆，门票已订。",
            messages=[
                ("user", "周六带孩子去科技馆，帮我订票"),
                ("assistant", "已订周六上午 9:30 场次 2 大 1 小，记得带身份证。"),
                ("user", "对了，周日是妈妈 60 岁生日，帮我挑个餐厅，8 个人", 7200),
                (
                    "assistant",
                    "推荐：鼎泰丰（包间需提前 3 天订）、外婆家（有 10 人圆桌）、一家本帮菜馆（安静适合长辈）。",
                ),
                ("user", "外婆家吧，要订 12:00 的位子，记得提醒我订蛋糕"),
            ],
        ),
        Spec(
            "bonus",
            "年终奖理财规划",
            "个人",
            ago(d=3, h=2),
            archived=True,
            summary="年终奖到账后的理财分配方案：应急金、定投、还房贷。",
            messages=[
                ("user", "年终奖到账了怎么分配"),
                ("assistant", "建议 30% 补足 6 个月应急金，40% 指数基金定投，30% 提前还房贷。"),
            ],
        ),
        Spec(
            "resume",
            "修改简历",
            "个人",
            ago(d=6),
            summary="把简历改成产品总监方向，突出 0-1 项目和团队管理。",
            messages=[
                ("user", "帮我把简历改成产品总监方向"),
                (
                    "assistant",
                    "项目经历只保留 3 个 0-1 项目，每个写清楚业务结果；管理经验单列一段。",
                ),
            ],
        ),
        Spec(
            "okr",
            "OKR 对齐",
            "产品",
            ago(d=3, h=6),
            summary="Q1 OKR：DAU 提升 15%，NPS 达到 45。",
            messages=[
                ("user", "和研发对齐一下 Q1 OKR"),
                (
                    "assistant",
                    "O1 增长：DAU +15%；O2 体验：NPS 45，崩溃率 < 0.1%。研发侧关注崩溃率。",
                ),
            ],
        ),
    ]
    cases = [
        Case("接着刚才那个，继续往下弄", "existing", ["reference_only"], "ref_top", target="book"),
        Case(
            "应用商店的截图换成新的那套吧",
            "existing",
            ["similar_names"],
            "unique",
            target="release_app",
            keys=("应用商店",),
            layer="summary",
        ),
        Case(
            "官网上线前那个 301 跳转清单再过一遍",
            "existing",
            ["similar_names"],
            "unique",
            target="release_web",
            keys=("301",),
            layer="summary",
        ),
        Case("发布准备那个继续吧", "clarify", ["similar_names"], "ambiguous", keys=("发布准备",)),
        Case(
            "王磊的 offer 薪资再往上谈 5%",
            "existing",
            ["similar_names"],
            "unique",
            target="cand_fe",
            keys=("王磊",),
            layer="summary",
        ),
        Case(
            "陈晨的笔试交了没？",
            "existing",
            ["similar_names"],
            "unique",
            target="cand_da",
            keys=("陈晨",),
            layer="summary",
        ),
        Case(
            "订单号 20261130-0042 的退款到账了吗",
            "existing",
            ["identifiers", "similar_names"],
            "unique",
            target="refund_0042",
            keys=("20261130-0042",),
            layer="evidence",
        ),
        Case(
            "妈妈生日那天的餐厅订好了吗？",
            "existing",
            ["stale_summary"],
            "unique",
            target="weekend",
            keys=("生日",),
            layer="evidence",
        ),
        Case("年终奖理财那个方案接着弄", "clarify", ["ineligible"], "ineligible", keys=("年终奖",)),
        Case("帮我订一张周五去上海的机票", "clarify", ["no_match"], "none", keys=("机票",)),
        Case("开个新任务，帮我规划明年的健身计划", "new", ["explicit_new"], "none", keys=("健身",)),
        Case(
            "简历里项目经历那段再精简一点",
            "existing",
            [],
            "unique",
            target="resume",
            keys=("简历",),
            layer="name",
        ),
        Case(
            "Q1 OKR 里 NPS 目标改成 50",
            "existing",
            ["mixed_zh_en"],
            "unique",
            target="okr",
            keys=("OKR",),
            layer="name",
        ),
    ]
    fill = dict(
        n_today=0,
        n_week=12,
        n_old=15,
        week_min=ago(d=1, h=20),
        old_range=(ago(d=10), ago(d=80)),
        workspaces={"个人", "家庭", "招聘", "产品", "运营"},
    )
    return sid, now, specs, cases, fill


# --------------------------------------------------------------------------------------
# Snapshot 3: window edge (positions 31/32/33) + ineligible sessions
# --------------------------------------------------------------------------------------


def snapshot_edge(rng: random.Random):
    sid = "window-edge-2026-12-03"
    now = datetime.fromisoformat("2026-12-03T16:00:00+08:00")
    keyed = {
        1: Spec(
            "pg16",
            "Postgres 16 upgrade plan",
            "platform",
            ago(m=20),
            state="waiting_for_user",
            summary="Plan the Postgres 14 → 16 upgrade for the main cluster with logical replication.",
            messages=[
                ("user", "Plan the Postgres 16 upgrade for the main cluster."),
                (
                    "assistant",
                    "Logical replication to a new 16 cluster, verify row counts, then a 2-minute cutover window. Extensions to check: pg_partman, postgis.",
                ),
                ("user", "Write the cutover checklist next."),
            ],
        ),
        4: Spec(
            "capacity",
            "Q1 capacity planning",
            "infra",
            ago(),
            summary="Forecast Q1 compute and storage capacity for the main cluster.",
            messages=[
                ("user", "Forecast compute and storage for Q1."),
                (
                    "assistant",
                    "At current growth, storage hits 80% in week 6 of Q1; compute is fine. Recommend adding 2 storage nodes in January.",
                ),
                (
                    "user",
                    "Different thing: the on-prem box gpu-01 keeps throttling, training jobs are 3x slower.",
                    30000,
                ),
                (
                    "assistant",
                    "gpu-01 sits at 83°C with fans at 100%: the intake filter is clogged and the rack's cold aisle door was left open. Asked facilities to check.",
                ),
            ],
        ),
        6: Spec(
            "node22",
            "Upgrade Node to 22",
            "web",
            ago(),
            summary="Bump services from Node 20 to 22; fix breaking changes in crypto and fetch.",
            messages=[
                ("user", "Let's move the web services to Node 22."),
                (
                    "assistant",
                    "Two breaking changes hit us: crypto.createCipher removed, and the undici fetch rejects our custom agent. Unit tests pass, integration pending.",
                ),
            ],
        ),
        30: Spec("handbook", "On-call handbook rewrite", "platform", ago(), activity="created"),
        31: Spec("rfc", "Draft RFC: multi-region failover", "platform", ago(), activity="status"),
        32: Spec(
            "temporal",
            "Migrate cron jobs to Temporal",
            "platform",
            ago(),
            state="blocked",
            summary="Moving 14 crontab jobs from the legacy box to Temporal workflows; 9 done.",
            messages=[
                ("user", "Which cron jobs are left to move to Temporal?"),
                (
                    "assistant",
                    "5 left: invoice-reminders, sitemap, search-reindex, cleanup-tmp, and the monthly export. The export needs a 2h activity timeout.",
                ),
            ],
        ),
        33: Spec(
            "vault",
            "Rotate Vault root token",
            "security",
            ago(),
            summary="Rotate the Vault root token and unseal keys after the offboarding.",
            messages=[
                ("user", "We need to rotate the Vault root token after Sam left."),
                (
                    "assistant",
                    "Generate a new root with the unseal key quorum, revoke the old one, then rekey. 3 of 5 key holders must be present.",
                ),
            ],
        ),
        38: Spec(
            "node20",
            "Upgrade Node to 20",
            "web",
            ago(),
            state="aborted",
            summary="Bump services from Node 18 to 20 (done for all but the legacy admin).",
            messages=[
                ("user", "Upgrade everything to Node 20."),
                (
                    "assistant",
                    "Done except the legacy admin app, which is pinned by an old native module.",
                ),
            ],
        ),
    }
    ineligible = [
        Spec(
            "indexer",
            "Index Confluence space ENG",
            "platform",
            ago(m=1),
            role="indexer",
            state="running",
            messages=[("tool", "indexed 1,840/2,300 pages of Confluence space ENG")],
        ),
        Spec(
            "coord",
            "Coordinator: platform sprint",
            "platform",
            ago(m=30),
            role="coordination",
            messages=[
                (
                    "assistant",
                    "Dispatched subagent: benchmark pgbouncer pool sizes (20/50/100) against the staging replica.",
                )
            ],
        ),
        Spec(
            "bench",
            "Benchmark pgbouncer pool sizes",
            "platform",
            ago(m=25),
            parent="coord",
            state="running",
            summary="pgbouncer pool size benchmark: 50 gives the best p99.",
            messages=[
                ("assistant", "pool_size=50: p99 41ms; 100: p99 44ms; 20: p99 180ms (queueing).")
            ],
        ),
        Spec(
            "teambuild",
            "闲聊：周五团建吃什么",
            "个人",
            ago(d=2),
            labels=[SIDE_LABEL],
            messages=[
                ("user", "周五团建吃火锅还是烤肉"),
                ("assistant", "12 个人的话烤肉店更好订，火锅要提前三天。"),
            ],
        ),
        Spec(
            "flaky",
            "Fix flaky e2e login test",
            "web",
            ago(d=3),
            archived=True,
            summary="The flaky e2e login test fails ~5% on CI due to a race with the cookie banner.",
            messages=[
                ("user", "The flaky e2e login test failed again."),
                (
                    "assistant",
                    "It races with the cookie banner; waiting for the banner to be dismissed fixes it.",
                ),
            ],
        ),
    ]
    cases = [
        Case("pick up where we left off", "existing", ["reference_only"], "ref_top", target="pg16"),
        Case(
            "How far along is the cron → Temporal migration?",
            "existing",
            ["position_33"],
            "unique",
            target="temporal",
            keys=("Temporal",),
            layer="name",
            position=32,
        ),
        Case(
            "Vault root token 轮换那个继续做完",
            "clarify",
            ["position_33", "mixed_zh_en"],
            "ineligible",
            keys=("Vault",),
            position=33,
        ),
        Case(
            "Let's start writing the outline for the multi-region failover RFC",
            "existing",
            ["position_33"],
            "unique",
            target="rfc",
            keys=("multi-region",),
            layer="name",
            position=31,
        ),
        Case(
            "Did we figure out why gpu-01 is thermal throttling?",
            "existing",
            ["stale_summary", "identifiers"],
            "unique",
            target="capacity",
            keys=("gpu-01",),
            layer="evidence",
        ),
        Case(
            "Node 22 upgrade: did the integration tests pass?",
            "existing",
            ["recency"],
            "unique",
            target="node22",
            keys=("Node", "22"),
            layer="name",
        ),
        Case(
            "Confluence 索引跑完了没",
            "clarify",
            ["ineligible", "mixed_zh_en"],
            "ineligible",
            keys=("Confluence",),
        ),
        Case(
            "What did the pgbouncer pool-size benchmark show?",
            "clarify",
            ["ineligible"],
            "ineligible",
            keys=("pgbouncer",),
        ),
        Case("周五团建吃什么定了吗", "clarify", ["ineligible"], "ineligible", keys=("团建",)),
        Case(
            "The flaky e2e login test — can you rerun it and check?",
            "clarify",
            ["ineligible"],
            "ineligible",
            keys=("flaky e2e",),
        ),
        Case(
            "Renew the company domain on GoDaddy before it expires",
            "clarify",
            ["no_match"],
            "none",
            keys=("GoDaddy", "domain"),
        ),
        Case(
            "Create a new session: evaluate Vault alternatives like OpenBao",
            "new",
            ["explicit_new"],
            "none",
            keys=("OpenBao",),
        ),
    ]
    fill = dict(
        ranked=keyed,
        n_eligible=40,
        ineligible=ineligible,
        workspaces={"infra", "platform", "web", "mobile", "data", "security", "billing", "growth"},
    )
    return sid, now, [*keyed.values(), *ineligible], cases, fill


# --------------------------------------------------------------------------------------
# Snapshot 4: US startup, Black Friday morning, English
# --------------------------------------------------------------------------------------


def snapshot_us(rng: random.Random):
    sid = "startup-us-2026-11-27"
    now = datetime.fromisoformat("2026-11-27T09:40:00-08:00")
    specs = [
        Spec(
            "weekly_growth",
            "Weekly report",
            "growth",
            ago(m=8),
            summary="Weekly growth metrics for Monday's exec sync: signups, activation, churn.",
            messages=[
                ("user", "Start the weekly report: signups, activation, churn."),
                (
                    "assistant",
                    "Signups 4,210 (+9% WoW), activation 38.5%, logo churn 1.1%. Want a note on the Black Friday traffic?",
                ),
                ("user", "Yes, add that later today."),
            ],
        ),
        Spec(
            "ios_new",
            "Hiring: senior iOS engineer (reopened)",
            "hiring",
            ago(m=20),
            summary="Req reopened in November; scheduling onsite loops for 2 candidates.",
            messages=[
                ("user", "The iOS req is back. Two candidates passed the phone screen."),
                (
                    "assistant",
                    "I'll propose onsite slots next Tue/Wed: system design, SwiftUI pairing, and the hiring manager chat.",
                ),
            ],
        ),
        Spec(
            "onboarding",
            "Onboarding email sequence",
            "growth",
            ago(m=35),
            summary="Writing the 5-email onboarding drip for new trial users; emails 1–3 drafted.",
            messages=[
                ("user", "Draft a 5-email onboarding sequence for trial users."),
                (
                    "assistant",
                    "Email 1: welcome + one setup step. Email 2: import your data. Email 3: invite a teammate. Drafts below.",
                ),
                ("user", "Good. Switching gears: the pricing page A/B test finished.", 86400),
                (
                    "assistant",
                    "Results: variant B (annual toggle on by default) got +12.4% checkout conversion vs control, p = 0.03, n = 18,900 sessions.",
                ),
                ("user", "Nice. Let's ship variant B but watch refunds."),
                (
                    "assistant",
                    "Agreed. I'll set up a refund-rate alert for annual plans over the next 30 days.",
                ),
            ],
        ),
        Spec(
            "sentry",
            "Sentry cleanup",
            "platform",
            ago(h=2, m=50),
            summary="Triage noisy Sentry issues in the web app; 40 muted so far.",
            messages=[
                ("user", "Let's clean up Sentry, too many noisy issues."),
                (
                    "assistant",
                    "Muted 40 issues from browser extensions and ResizeObserver loop warnings.",
                ),
                (
                    "user",
                    "Unrelated but urgent: the image-resizer worker keeps getting OOM-killed.",
                    50000,
                ),
                (
                    "assistant",
                    "Its RSS grows ~40MB/hour and it's killed every ~9h. Suspect the sharp cache; trying sharp.cache(false) on one replica.",
                ),
            ],
        ),
        Spec(
            "weekly_platform",
            "Weekly report",
            "platform",
            ago(d=1, h=2),
            summary="Platform team weekly: on-call load, incidents, deploy frequency.",
            messages=[
                ("user", "Start the platform weekly."),
                (
                    "assistant",
                    "Deploys: 61. Incidents: 2 (one SEV2). I left placeholders for pager stats.",
                ),
            ],
        ),
        Spec(
            "inc_followups",
            "Checkout outage follow-ups",
            "platform",
            ago(d=1, h=4),
            state="waiting_for_user",
            summary="Action items after last Tuesday's checkout outage: DB failover runbook, pool saturation alert.",
            messages=[
                ("user", "Track the action items from INC-2291."),
                (
                    "assistant",
                    "INC-2291 has 4 action items: failover runbook (owner: Priya), pool saturation alert (done), load test (todo), status page automation (todo).",
                ),
            ],
        ),
        Spec(
            "inc_2305",
            "Postmortem INC-2305",
            "platform",
            ago(h=3),
            summary="Postmortem for the search latency spike on Nov 26.",
            messages=[
                ("user", "Start the postmortem doc."),
                (
                    "assistant",
                    "Root cause: a reindex job saturated the search cluster's heap. Drafted summary and impact; timeline is next.",
                ),
            ],
        ),
        Spec(
            "ios_old",
            "Hiring: senior iOS engineer",
            "hiring",
            ago(d=27),
            state="aborted",
            summary="Req paused due to the budget freeze; 3 candidates were put on hold.",
            messages=[
                ("user", "Finance froze the iOS req."),
                (
                    "assistant",
                    "Sent hold emails to the 3 candidates in the pipeline and closed the job post.",
                ),
            ],
        ),
        Spec(
            "appstore",
            "App Store review",
            "mobile",
            ago(d=2),
            summary="Handling App Store review feedback for release 4.8.",
            messages=[
                ("user", "4.8 got rejected."),
                (
                    "tool",
                    "Guideline 5.1.1(v) - Data Collection and Storage: apps that support account creation must also offer account deletion.",
                ),
                (
                    "assistant",
                    "We only have deletion via support email. We need an in-app delete flow; I'll spec it.",
                ),
            ],
        ),
    ]
    cases = [
        Case(
            "What was the conversion lift for variant B in the pricing test? Let's write up the decision.",
            "existing",
            ["stale_summary"],
            "unique",
            target="onboarding",
            keys=("variant B",),
            layer="evidence",
        ),
        Case(
            "Any progress on the image-resizer memory leak?",
            "existing",
            ["stale_summary"],
            "unique",
            target="sentry",
            keys=("image-resizer",),
            layer="evidence",
        ),
        Case(
            "Start a new task for the image-resizer leak, I want a clean thread for it",
            "new",
            ["explicit_new"],
            "new_overlap",
            keys=("image-resizer",),
        ),
        Case(
            "Weekly report: set activation to 41% and add a note on the Black Friday signup spike",
            "existing",
            ["similar_names"],
            "unique",
            target="weekly_growth",
            keys=("activation",),
            layer="summary",
        ),
        Case(
            "In the weekly report, fill in this week's pager stats in the on-call section",
            "existing",
            ["similar_names"],
            "unique",
            target="weekly_platform",
            keys=("on-call",),
            layer="summary",
        ),
        Case(
            "Let's finish the weekly report",
            "clarify",
            ["similar_names"],
            "ambiguous",
            keys=("weekly report",),
        ),
        Case(
            "Any update on INC-2291?",
            "existing",
            ["identifiers"],
            "unique",
            target="inc_followups",
            keys=("INC-2291",),
            layer="evidence",
        ),
        Case(
            "Draft the customer-facing timeline for INC-2305",
            "existing",
            ["identifiers"],
            "unique",
            target="inc_2305",
            keys=("INC-2305",),
            layer="name",
        ),
        Case(
            "Schedule the next round for the senior iOS candidates",
            "existing",
            ["recency", "similar_names"],
            "recency",
            target="ios_new",
            other="ios_old",
            keys=("senior iOS",),
            layer="name",
        ),
        Case(
            "They rejected us under 5.1.1(v) again — let's add in-app account deletion",
            "existing",
            ["identifiers"],
            "unique",
            target="appstore",
            keys=("5.1.1",),
            layer="evidence",
        ),
        Case(
            "Book a table for four at an Italian place tonight",
            "clarify",
            ["no_match"],
            "none",
            keys=("Italian",),
        ),
        Case(
            "Create a new session to plan the March offsite",
            "new",
            ["explicit_new"],
            "none",
            keys=("offsite",),
        ),
        Case(
            "the one we talked about this morning — keep going",
            "clarify",
            ["reference_only"],
            "ref_tie",
        ),
    ]
    fill = dict(
        n_today=6,
        n_week=9,
        n_old=14,
        today_min=ago(m=45),
        old_range=(ago(d=32), ago(d=75)),
        workspaces={
            "growth",
            "platform",
            "mobile",
            "hiring",
            "personal",
            "web",
            "data",
            "security",
        },
        english_only=True,
    )
    return sid, now, specs, cases, fill


# --------------------------------------------------------------------------------------
# Snapshot 5: night on-call, repetitive logs
# --------------------------------------------------------------------------------------


def snapshot_oncall(rng: random.Random):
    sid = "oncall-night-2026-12-02"
    now = datetime.fromisoformat("2026-12-02T03:20:00+08:00")
    specs = [
        Spec(
            "pay5xx",
            "凌晨告警：payments-api 5xx",
            "payments",
            ago(m=2),
            state="running",
            summary="03:05 起 payments-api 5xx 飙升到 8%，正在排查。",
            messages=[
                ("user", "payments-api 5xx 告警，帮我一起看"),
                (
                    "assistant",
                    "03:05 开始 5xx 升到 8%，集中在 /v1/charges，上游渠道超时。正在按渠道拆分错误。",
                ),
                ("user", "先看是哪个渠道"),
            ],
            pace=120,
        ),
        Spec(
            "redis_staging",
            "Redis 超时",
            "infra",
            ago(h=7, m=30),
            messages=[
                ("user", "staging 的 Redis 从傍晚开始一直超时，帮我盯一下重连日志"),
                *per_line(
                    redis_retry_log(rng, "ReplyError: NOAUTH Authentication required.", 121, 200), 3
                ),
                ("assistant", "重试还在继续，暂时没看出规律，我先记下来。", 30),
            ],
        ),
        Spec(
            "redis_prod",
            "Redis 超时",
            "infra",
            ago(d=1, h=18),
            summary="prod 集群 Redis 超时，已扩容 twemproxy，观察中。",
            messages=[
                ("user", "prod Redis 超时报警"),
                ("assistant", "twemproxy 两个实例 CPU 打满，已扩到 4 个，p99 从 120ms 回到 8ms。"),
            ],
        ),
        Spec(
            "kafka",
            "消费延迟告警",
            "data",
            ago(h=9),
            summary="订单事件 consumer lag 告警，峰值 120 万。",
            messages=[
                ("user", "order-events 的 consumer lag 又告警了"),
                *chunk(
                    kafka_lag_log(
                        rng,
                        "org.apache.kafka.clients.consumer.CommitFailedException: Commit cannot be completed since the group has already rebalanced and assigned the partitions to another member.",
                        57,
                        100,
                    ),
                    10,
                    3,
                ),
                ("assistant", "lag 在持续上涨，我还在看是不是消费者处理太慢。", 40),
            ],
        ),
        Spec(
            "ws",
            "长连接掉线",
            "web",
            ago(d=1, h=3),
            summary="部分用户长连接每隔几分钟掉线重连。",
            messages=[
                ("user", "有用户反馈每隔几分钟就掉线重连"),
                (
                    "assistant",
                    "看了 src/server/ws.ts，心跳间隔是 60s，但 LB 的 idle timeout 是 30s，连接会被 LB 掐掉。",
                ),
                ("user", "心跳改短一点应该就行"),
            ],
        ),
        Spec(
            "discover",
            "Discover flaky tests",
            "infra",
            ago(h=3),
            role="discovery",
            state="running",
            messages=[
                (
                    "tool",
                    "scanned 412 CI runs: 9 flaky tests found, top: checkout.spec.ts (11% fail rate)",
                )
            ],
        ),
        Spec(
            "es_new",
            "Elasticsearch 磁盘水位",
            "infra",
            ago(h=9, m=30),
            summary="ES 集群磁盘水位到 88%，触发 high watermark，正在清理旧索引。",
            messages=[
                ("user", "ES 磁盘水位告警了"),
                (
                    "assistant",
                    "data 节点磁盘 88%，超过 high watermark 85%。建议删掉 90 天前的 logs-* 索引，并调整 ILM。",
                ),
            ],
        ),
        Spec(
            "es_old",
            "Elasticsearch 磁盘水位",
            "infra",
            ago(d=36),
            state="aborted",
            summary="上次磁盘水位告警，已通过扩容两个 data 节点解决。",
            messages=[
                ("user", "ES 磁盘快满了"),
                ("assistant", "已扩容 2 个 data 节点，分片重新均衡后水位降到 62%。"),
            ],
        ),
    ]
    cases = [
        Case(
            "continue that one — what's the error breakdown now?",
            "existing",
            ["reference_only"],
            "ref_top",
            target="pay5xx",
        ),
        Case(
            "payments-api 5xx 那个告警，现在是哪个渠道的问题？",
            "existing",
            ["mixed_zh_en"],
            "unique",
            target="pay5xx",
            keys=("payments-api",),
            layer="name",
        ),
        Case(
            "把 staging 的 Redis 超时问题继续跟进一下",
            "existing",
            ["similar_names", "mixed_zh_en", "repetitive_logs"],
            "unique",
            target="redis_staging",
            keys=("staging", "Redis"),
            layer="evidence",
        ),
        Case(
            "NOAUTH Authentication required 是不是因为密码轮换了？",
            "existing",
            ["repetitive_logs", "identifiers", "mixed_zh_en", "similar_names"],
            "unique",
            target="redis_staging",
            keys=("NOAUTH",),
            layer="evidence",
        ),
        Case(
            "CommitFailedException 那个 rebalance，把 max.poll.interval.ms 调大试试",
            "existing",
            ["repetitive_logs", "identifiers", "mixed_zh_en"],
            "unique",
            target="kafka",
            keys=("CommitFailedException",),
            layer="evidence",
        ),
        Case(
            "src/server/ws.ts 里的心跳间隔改成 25s 吧",
            "existing",
            ["identifiers", "mixed_zh_en"],
            "unique",
            target="ws",
            keys=("src/server/ws.ts",),
            layer="evidence",
        ),
        Case(
            "flaky test 扫描结果出来了吗",
            "clarify",
            ["ineligible", "mixed_zh_en"],
            "ineligible",
            keys=("flaky",),
        ),
        Case("帮我写一首给女儿的生日诗", "clarify", ["no_match"], "none", keys=("生日", "女儿")),
        Case(
            "create a new session: write the postmortem for tonight's payments-api incident",
            "new",
            ["explicit_new"],
            "new_overlap",
            keys=("payments-api",),
        ),
        Case(
            "ES 磁盘水位又告警了，继续处理",
            "existing",
            ["recency", "mixed_zh_en"],
            "recency",
            target="es_new",
            other="es_old",
            keys=("磁盘水位",),
            layer="name",
        ),
    ]
    fill = dict(
        n_today=0,
        n_week=12,
        n_old=17,
        week_min=ago(h=10),
        old_range=(ago(d=40), ago(d=100)),
        workspaces={"infra", "platform", "data", "web", "security", "个人"},
    )
    return sid, now, specs, cases, fill


# --------------------------------------------------------------------------------------
# Snapshot 6: e-commerce operations, Saturday afternoon
# --------------------------------------------------------------------------------------


def snapshot_shop(rng: random.Random):
    sid = "ecommerce-ops-2026-12-05"
    now = datetime.fromisoformat("2026-12-05T14:05:00+08:00")
    same_summary = "处理本周客服升级工单。"
    specs = [
        Spec(
            "ticket_1187",
            "客服工单处理",
            "客服",
            ago(m=2),
            summary=same_summary,
            messages=[
                ("user", "订单号 20261204-1187 客户说少发了一个杯盖"),
                (
                    "assistant",
                    "查了出库记录，杯盖是单独 SKU，仓库漏拣。已提交补发申请，预计明天发出。",
                ),
                ("user", "补发单号出来告诉我"),
            ],
            pace=60,
        ),
        Spec(
            "sku",
            "Shopify SKU 同步",
            "数据",
            ago(m=4),
            state="running",
            summary="把 ERP 的 SKU 每小时同步到 Shopify。",
            messages=[
                ("user", "SKU 同步任务又报错了"),
                ("assistant", "最近一次同步有 23 个 SKU 因为 barcode 重复被拒，正在导出清单。"),
            ],
            pace=60,
        ),
        Spec(
            "ticket_0356",
            "客服工单处理",
            "客服",
            ago(d=1, h=2),
            state="waiting_for_user",
            summary=same_summary,
            messages=[
                ("user", "订单 20261201-0356 的客户说发票抬头开错了"),
                ("assistant", "需要先红冲原发票再重开，已让财务处理，客户需要提供正确的税号。"),
            ],
        ),
        Spec(
            "promo",
            "大促复盘",
            "运营",
            ago(h=1),
            summary="双11 大促数据复盘：GMV 同比 +23%，转化率 3.1%。",
            messages=[
                ("user", "做一下双11 的复盘"),
                ("assistant", "GMV 同比 +23%，转化率 3.1%，客单价下降 4%，主要是满减门槛太低。"),
                ("user", "接下来想定双12 的优惠券规则：满 300 减 40 能不能和店铺券叠加？", 172800),
                (
                    "assistant",
                    "建议平台满减和店铺券可叠加，但同类券互斥；叠加后最低折扣控制在 75 折。",
                ),
                ("user", "叠加规则先按这个写，等老板确认"),
            ],
        ),
        Spec(
            "recon_new",
            "对账差异",
            "billing",
            ago(h=3),
            summary="11 月支付宝渠道对账差异 ¥3,412.50，逐笔核对中。",
            messages=[
                ("user", "11 月支付宝对账差了 3412.5"),
                ("assistant", "先按日期拆，差异集中在 11 月 11 日和 12 日两天，可能是跨日退款。"),
            ],
        ),
        Spec(
            "recon_old",
            "对账差异",
            "billing",
            ago(d=30),
            state="aborted",
            summary="10 月微信支付对账差异，已定位为退款时间差。",
            messages=[
                ("user", "10 月微信对账有差异"),
                ("assistant", "已定位：是月末最后一天的退款跨月入账，不是真实差异。"),
            ],
        ),
        Spec(
            "logistics",
            "物流接口对接",
            "数据",
            ago(d=1, h=6),
            state="blocked",
            summary="对接快递物流轨迹接口，推送到订单详情页。",
            messages=[
                ("user", "物流轨迹接口调不通"),
                (
                    "tool",
                    'HTTP 200 {"success": false, "errorCode": "8016", "errorMsg": "月结卡号与寄件人不匹配"}',
                ),
                (
                    "assistant",
                    "返回 8016，月结卡号和寄件人信息不匹配，需要找快递公司的客户经理确认绑定关系。",
                ),
            ],
        ),
        Spec(
            "presale",
            "双11 预售定金规则",
            "运营",
            ago(d=20),
            archived=True,
            summary="预售定金膨胀规则：定金 50 抵 100。",
            messages=[
                ("user", "预售定金规则怎么定"),
                ("assistant", "定金 50 抵 100，尾款时间 11 月 10 日 20:00 开始。"),
            ],
        ),
    ]
    cases = [
        Case("刚才说的那个继续", "clarify", ["reference_only"], "ref_tie"),
        Case(
            "双12 coupon 能不能和满减叠加，规则定了没？",
            "existing",
            ["stale_summary", "mixed_zh_en"],
            "unique",
            target="promo",
            keys=("双12",),
            layer="evidence",
        ),
        Case(
            "新建一个任务，把双12 优惠券规则单独拿出来做",
            "new",
            ["explicit_new"],
            "new_overlap",
            keys=("双12",),
        ),
        Case(
            "20261204-1187 那单少发的货补发了吗",
            "existing",
            ["identifiers", "similar_names"],
            "unique",
            target="ticket_1187",
            keys=("20261204-1187",),
            layer="evidence",
        ),
        Case(
            "订单 20261201-0356 的发票重开了吗",
            "existing",
            ["identifiers", "similar_names"],
            "unique",
            target="ticket_0356",
            keys=("20261201-0356",),
            layer="evidence",
        ),
        Case(
            "Shopify 那边 SKU 同步又失败了，帮我看看",
            "existing",
            ["mixed_zh_en"],
            "unique",
            target="sku",
            keys=("Shopify",),
            layer="name",
        ),
        Case(
            "对账差异继续查",
            "existing",
            ["recency", "similar_names"],
            "recency",
            target="recon_new",
            other="recon_old",
            keys=("对账差异",),
            layer="name",
        ),
        Case(
            "接口报 error 8016 那个，客户经理回复了吗",
            "existing",
            ["identifiers", "mixed_zh_en"],
            "unique",
            target="logistics",
            keys=("8016",),
            layer="evidence",
        ),
        Case("预售定金的规则继续改", "clarify", ["ineligible"], "ineligible", keys=("定金",)),
        Case("帮我把家里的路由器重置一下", "clarify", ["no_match"], "none", keys=("路由器",)),
    ]
    fill = dict(
        n_today=5,
        n_week=10,
        n_old=13,
        today_min=ago(m=25),
        old_range=(ago(d=35), ago(d=90)),
        workspaces={"运营", "客服", "billing", "数据", "个人", "产品"},
    )
    return sid, now, specs, cases, fill


SNAPSHOTS = [snapshot_team, snapshot_pm, snapshot_edge, snapshot_us, snapshot_oncall, snapshot_shop]
SHORT = {
    "team-infra-2026-12-01": "team",
    "personal-pm-2026-12-07": "pm",
    "window-edge-2026-12-03": "edge",
    "startup-us-2026-11-27": "us",
    "oncall-night-2026-12-02": "oncall",
    "ecommerce-ops-2026-12-05": "shop",
}


def main() -> None:
    ds = Dataset(
        OUT, SEED, SNAPSHOTS, SHORT, ALLOWED_TAGS, WS_SLUG, FILLERS, min_cases=40, max_snapshots=8
    )
    generate(ds)


if __name__ == "__main__":
    main()

"""The status page as HTML: one section per part, red items first with what to do, and two
charts (model tokens per day by role, Feishu API calls per day against the quota)."""

from __future__ import annotations

from html import escape

from bot.llm.roles import LABEL_ORDER
from bot.web.status.charts import Bar, bar_chart
from bot.web.status.items import Item
from bot.web.status.report import StatusReport

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#111827;max-width:980px}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:22px 0 6px}
.meta{color:#6b7280} table{border-collapse:collapse;width:100%}
td{padding:4px 8px;border-bottom:1px solid #e5e7eb;vertical-align:top}
tr.red td{background:#fef2f2} .state{font-weight:600} tr.red .state{color:#b91c1c}
.hint{color:#b91c1c;font-size:13px} .empty{color:#6b7280} .summary.red{color:#b91c1c}
.summary.ok{color:#047857} svg.chart{margin:6px 0;max-width:100%}
"""

ICON = '<link rel="icon" href="data:,">'  # else the browser asks for /favicon.ico (a 404)
LOGIN = """<!doctype html><meta charset="utf-8"><title>Maka status: log in</title>
<link rel="icon" href="data:,">
<style>{style}</style><h1>Maka status</h1>
<p>{message}</p>
<form method="post" action="/status/login">
<label>Admin token (MAKA_ADMIN_TOKEN) <input type="password" name="token" autofocus></label>
<button type="submit">Log in</button></form>"""


def login_page(message: str) -> str:
    return LOGIN.format(style=STYLE, message=escape(message))


def _rows(items: list[Item], empty: str) -> str:
    if not items:
        return f'<p class="empty">{escape(empty)}</p>'
    ordered = sorted(items, key=lambda i: not i.red)
    rows = []
    for i in ordered:
        hint = f'<div class="hint">What to do: {escape(i.hint)}</div>' if i.red and i.hint else ""
        rows.append(
            f'<tr class="{"red" if i.red else "ok"}"><td>{escape(i.name)}</td>'
            f'<td class="state">{escape(i.state)}</td><td>{escape(i.detail)}{hint}</td></tr>'
        )
    return f"<table>{''.join(rows)}</table>"


def render(report: StatusReport) -> str:
    usage_bars = [Bar(d.day.strftime("%m-%d"), d.tokens) for d in report.model_usage]
    roles = [r for r in LABEL_ORDER if any(r in d.tokens for d in report.model_usage)] or ["Bot"]
    api_bars = [Bar(d.day.strftime("%m-%d"), {"calls": d.calls}) for d in report.feishu_api]
    red = report.red_count
    summary = (
        f'<p class="summary red">{red} item{"s" if red != 1 else ""} need attention (marked '
        "red, with what to do).</p>"
        if red
        else '<p class="summary ok">Everything is working.</p>'
    )
    quota = report.feishu_quota
    month = f"{report.feishu_month_calls} Feishu API calls this month" + (
        f" of {quota} ({100 * report.feishu_month_calls // quota}%)" if quota else ""
    )
    sections = [
        ("Sources", _rows(report.sources, "No sources synced yet.")),
        ("Memory indexes", _rows(report.indexes, "No memory indexes (/index create).")),
        ("Matters", _rows(report.matters, "No long-running tasks.")),
        ("Discovery", _rows(report.discovery, "")),
        ("Outbox", _rows(report.outbox, "")),
        ("Parked input", _rows(report.parked, "Nothing parked: every input was handled.")),
        ("Attachments", _rows(report.attachments, "No files, images or voice messages yet.")),
        ("Forgetting", _rows(report.forgets, "Nothing forgotten on request (/forget).")),
        ("Owner sign-in", _rows(report.owner, "")),
        ("Actions", _rows(report.actions, "No outward actions asked for yet.")),
        (
            "Said on its own (why)",
            _rows(report.unasked, "Nothing yet: findings, task results and notices show here."),
        ),
        (
            "Model usage",
            bar_chart("Model tokens per day, by role", usage_bars, roles),
        ),
        ("Model costs", _rows(report.costs, "")),
        (
            "Top conversations by cost (7 days)",
            _rows(report.top_conversations, "No model calls for a conversation in 7 days."),
        ),
        (
            "Feishu API",
            f"<p>{escape(month)}</p>"
            + bar_chart(
                "Feishu API calls per day",
                api_bars,
                ["calls"],
                limit=quota // 30 if quota else None,
            ),
        ),
        ("Data retention", _rows(report.retention, "")),
    ]
    body = "".join(f"<h2>{escape(title)}</h2>{html}" for title, html in sections)
    when = report.generated_at.strftime("%Y-%m-%d %H:%M UTC")
    return (
        f'<!doctype html><html lang="en"><meta charset="utf-8"><title>Maka status</title>'
        f'<meta name="viewport" content="width=device-width">{ICON}'
        f"<style>{STYLE}</style><h1>Maka status</h1>"
        f'<p class="meta">As of {when} · times in {escape(report.timezone)} · '
        f'<a href="/status.json">JSON</a></p>{summary}{body}</html>'
    )

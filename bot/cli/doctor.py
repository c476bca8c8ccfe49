"""`maka doctor`: one line per check, non-zero exit if any fails."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path

import aiohttp

from bot.cli.database import sqlite_file_must_exist
from bot.config import SearchBackend, Settings, reveal
from bot.llm.factory import NO_API_KEY
from bot.llm.openai_compat import OpenAICompatibleProvider
from bot.llm.probe import probe
from bot.llm.roles import OWN_MODEL_ROLES, ModelRole
from bot.memory.search import SearchService, open_index
from bot.owner.signin import refusal
from bot.owner.tokens import read_sign_in_state
from storage.db import DatabaseNotReady, create_database, describe_error
from storage.migrate import current_revision, head_revision, refuse_unknown
from storage.urls import masked_database_url, sqlite_file_of

CHECK_TIMEOUT = 10.0


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'}  {self.name}: {self.detail}"


async def check_database(settings: Settings) -> Check:
    url = settings.resolved_database_url
    where = masked_database_url(url)
    try:
        sqlite_file_must_exist(url)  # a check creates nothing
    except DatabaseNotReady as exc:
        problem = _folder_cannot_be_made(Path(sqlite_file_of(url)).parent)
        if problem:
            return Check("database", False, f"cannot create {where}: {problem}")
        return Check("database", True, str(exc))
    db = create_database(url)
    try:
        await db.reach()
        current, head = await current_revision(db), head_revision()
        refuse_unknown(current)
    except DatabaseNotReady as exc:
        return Check("database", False, str(exc))
    except Exception as exc:
        return Check("database", False, f"cannot use {where}: {describe_error(exc, url)}")
    finally:
        await db.dispose()
    if current == head:
        return Check("database", True, f"{where}, schema {current} (current)")
    if db.is_sqlite:
        return Check(
            "database",
            True,
            f"{where}, schema {current or 'empty'}; `maka serve` migrates it to {head}",
        )
    return Check(
        "database",
        False,
        f"{where}, schema {current or 'empty'} but this version needs {head}: run `maka migrate`",
    )


async def check_search(settings: Settings) -> Check:
    if settings.search_backend is SearchBackend.MEILISEARCH:
        where = f"meilisearch at {settings.meili_url}"
        search = SearchService(open_index(settings))  # the service's own check, key included
        try:
            async with asyncio.timeout(CHECK_TIMEOUT):
                problem = await search.health()
        except TimeoutError:
            problem = f"no answer within {CHECK_TIMEOUT:.0f}s"
        finally:
            await search.close()
        if problem is not None:
            return Check("search", False, f"{where}: {problem.splitlines()[0][:300]}")
        return Check("search", True, f"{where}: available, index ready")
    # The embedded index belongs to the running service (one writer per directory): only
    # check that it could be opened here.
    path = settings.data_dir / "search"
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".doctor"
        probe.write_text("ok")
        probe.unlink()
        import tantivy  # noqa: F401  (the embedded backend needs its native module)
    except Exception as exc:
        return Check("search", False, f"embedded index at {path}: {_brief(exc)}")
    return Check("search", True, f"embedded (tantivy) at {path}")


async def check_owner_signin(settings: Settings) -> Check:
    """Signed in or not, until when, the last error; never a token. Not being signed in is
    no failure (nothing needs it yet); a sign-in gone red is."""
    off = refusal(settings)
    if off is not None:
        return Check("owner-signin", True, off)
    url = settings.resolved_database_url
    try:
        sqlite_file_must_exist(url)
    except DatabaseNotReady:
        return Check("owner-signin", True, "not signed in (no database yet)")
    db = create_database(url)
    try:
        state = await read_sign_in_state(settings, db)
    except Exception as exc:
        return Check("owner-signin", False, f"cannot read it: {_brief(exc)}")
    finally:
        await db.dispose()
    return Check("owner-signin", not state.red, state.line().removeprefix("owner sign-in: "))


async def check_feishu(settings: Settings) -> Check:
    if not settings.feishu_configured:
        return Check("feishu", True, "not configured; the console channel at /console is used")
    url = f"{settings.feishu_domain}/open-apis/auth/v3/tenant_access_token/internal"
    payload = {"app_id": settings.feishu_app_id, "app_secret": reveal(settings.feishu_app_secret)}
    try:
        async with aiohttp.ClientSession() as http, http.post(url, json=payload) as resp:
            body = await resp.json(content_type=None)
    except Exception as exc:
        return Check("feishu", False, f"{settings.feishu_domain}: {_brief(exc)}")
    if body.get("code") == 0:
        return Check("feishu", True, f"app {settings.feishu_app_id} got a tenant token")
    return Check(
        "feishu", False, f"app {settings.feishu_app_id}: code {body.get('code')} {body.get('msg')}"
    )


async def check_model(settings: Settings) -> list[Check]:
    """The endpoint's listing, then one real tool-calling request, a streaming request and
    its reported context window (`bot.llm.probe`): a line each."""
    if not settings.model_configured:
        return [
            Check(
                "model",
                True,
                "not configured; slash commands work, chat replies "
                "explain how to set MAKA_MODEL_BASE_URL, MAKA_MODEL_API_KEY, MAKA_MODEL_NAME",
            )
        ]
    assert settings.model_base_url and settings.model_name
    provider = OpenAICompatibleProvider(
        settings.model_base_url,
        reveal(settings.model_api_key) or NO_API_KEY,
        settings.model_name,
        timeout=CHECK_TIMEOUT,
        attempts=1,
    )
    try:
        try:
            listing = Check("model", True, await provider.check())
        except Exception as exc:
            return [Check("model", False, f"{settings.model_base_url}: {_brief(exc)}")]
        report = await probe(provider)
    finally:
        await provider.aclose()
    return [
        listing,
        Check("model-answers", report.answers.ok, report.answers.detail),
        Check("model-tools", report.tools.ok, report.tools.detail),
        Check("model-streaming", report.streams.ok, report.streams.detail),
        Check("model-context", report.context.ok, report.context.detail),
    ]


async def check_model_roles(settings: Settings) -> Check:
    """Which model answers each role and the fallback, in one line; asks no server (the
    model check asks the main one)."""
    main = settings.main_endpoint
    if main is None and not any(map(settings.role_endpoint, OWN_MODEL_ROLES)):
        return Check("model-roles", True, "none; MAKA_MODEL_<ROLE>_* give a role its own model")
    parts = []
    for role in (*OWN_MODEL_ROLES, "fallback"):
        endpoint = (
            settings.fallback_endpoint
            if role == "fallback"
            else settings.role_endpoint(ModelRole(role))
        )
        if endpoint is None:
            parts.append(f"{role}=none")
        elif endpoint == main:
            parts.append(f"{role}=main")
        elif main is not None and endpoint.base_url == main.base_url:
            parts.append(f"{role}={endpoint.name}")
        else:
            parts.append(f"{role}={endpoint.describe()}")
    return Check("model-roles", True, ", ".join(parts))


async def check_smtp(settings: Settings) -> Check:
    """Connect and log in to the SMTP server mail actions send through (never sends)."""
    from bot.actions.mail_transport import smtp_check, smtp_settings

    smtp = smtp_settings(settings)
    if smtp is None:
        return Check("smtp", True, "not configured; mail actions say to set MAKA_SMTP_HOST")
    try:
        return Check("smtp", True, await asyncio.to_thread(smtp_check, smtp))
    except Exception as exc:
        return Check("smtp", False, f"{smtp.where}: {_brief(exc)}")


CHECKS: tuple[Callable[[Settings], Awaitable[Check | list[Check]]], ...] = (
    check_database,
    check_search,
    check_feishu,
    check_model,
    check_model_roles,
    check_owner_signin,
    check_smtp,
)


async def run_doctor(settings: Settings) -> list[Check]:
    async def bounded(check: Callable[[Settings], Awaitable[Check | list[Check]]]) -> list[Check]:
        name = check.__name__.removeprefix("check_")
        # The model's probe asks up to three questions after its listing, each bounded by
        # CHECK_TIMEOUT, some at once.
        limit = CHECK_TIMEOUT * (3 if check is check_model else 1)
        try:
            async with asyncio.timeout(limit):
                found = await check(settings)
        except TimeoutError:
            return [Check(name, False, f"no answer within {limit:.0f}s")]
        return found if isinstance(found, list) else [found]

    checks = await asyncio.gather(*(bounded(c) for c in CHECKS))
    secrets = settings.secret_values()
    return [_scrubbed(check, secrets) for group in checks for check in group]


def _scrubbed(check: Check, secrets: list[str]) -> Check:
    """A server's error text may echo a key we sent: never print one."""
    detail = check.detail
    for secret in secrets:
        if len(secret) >= 4:  # a shorter one would garble the line and hides nothing
            detail = detail.replace(secret, "***")
    return replace(check, detail=detail)


def _brief(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__


def _folder_cannot_be_made(folder: Path) -> str | None:
    """Why `maka serve` could not make this folder, judged without making it: the nearest
    part of the path that exists must be a folder this process may write in."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable"
    return None

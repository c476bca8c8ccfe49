"""The Bot recalls from synced mail and chat: asked in the owner's DM about a person and a
decision found only in a mail, it answers from `memory_search` and `memory_original`; the
same question in a group finds nothing of the mail.

Real components: the mail is synced from Dovecot over IMAP, the chat arrives through the
webhook, both reach the search index through the source follower; only the model is
scripted (it reads what the tools returned and answers from it)."""

from __future__ import annotations

import re
from email.mime.text import MIMEText

from bot.llm.types import Message
from storage.repos import source_records
from storage.repos import sources as sources_repo
from storage.repos.source_records import NewRecord
from storage.search import SearchFilters
from storage.types import utcnow
from tests.assistant.support import all_delivered, bot_world, replies, say, say_in_group, send
from tests.assistant.support import sleep as sleep_step
from tests.feishu_world import WorldFactory
from tests.matters.routed_model import RoutedModel
from tests.sources.conftest import dovecot_server, mail_account  # noqa: F401  (fixtures)
from tests.sources.dovecot import MailAccount
from tests.waiting import wait_until

QUESTION = "who owns the packaging supplier contract, and which supplier did we pick?"
DECISION = "Decided: Hengda is our packaging supplier. Li Wei owns the contract from here."
REF = re.compile(r"\[(rec-\d+)\]")


def decision_mail() -> bytes:
    msg = MIMEText(f"Hi,\n\n{DECISION}\n\nWang Fang", "plain", "utf-8")
    msg["Subject"] = "Packaging supplier decision"
    msg["From"] = "Wang Fang <wang.fang@example.com>"
    msg["To"] = "owner@example.com"
    msg["Message-ID"] = "<packaging-1@example.com>"
    return msg.as_bytes()


def tool_result(messages: list[Message], name: str) -> str:
    return next(m.content or "" for m in reversed(messages) if m.role == "tool" and m.name == name)


def read_a_hit(seen: dict[str, str]) -> object:
    """Read the first hit; given the mail's ref (in the group, where the mail cannot be
    found), read that instead, as a model that remembered it from elsewhere could."""

    def step(messages: list[Message]) -> object:
        seen["search"] = tool_result(messages, "memory_search")
        refs = REF.findall(seen["search"])
        return send("memory_original", {"ref": seen.get("mail_ref") or refs[0]})

    return step


def answer_from_what_was_read(seen: dict[str, str]) -> object:
    def step(messages: list[Message]) -> object:
        seen["original"] = tool_result(messages, "memory_original")
        found = re.search(r"Li Wei owns the contract", seen["original"])
        supplier = re.search(r"(\w+) is our packaging supplier", seen["original"])
        if found and supplier:
            text = f"Li Wei owns it; we picked {supplier.group(1)} (mail from Wang Fang)."
        else:
            text = "I found nothing about that here."
        return send("send_user", {"text": text})

    return step


async def test_the_owner_recalls_a_decision_from_mail_and_a_group_finds_none_of_it(
    make_world: WorldFactory,
    mail_account: MailAccount,  # noqa: F811
) -> None:
    mail_account.append("INBOX", decision_mail())
    in_dm: dict[str, str] = {}
    in_group: dict[str, str] = {}
    model = RoutedModel()
    model.add(
        "bot",
        send("memory_search", {"query": "packaging supplier contract"}),
        read_a_hit(in_dm),
        answer_from_what_was_read(in_dm),
        sleep_step,
    )
    async with bot_world(
        make_world,
        model,  # type: ignore[arg-type]
        email_host=mail_account.server.host,
        email_port=mail_account.server.port,
        email_security="none",
        email_user=mail_account.user,
        email_password=mail_account.password,
    ) as w:
        services = w.app.services
        async with services.db.write() as s:
            await sources_repo.ensure(
                s, name="email:INBOX", kind="email", scope=None, title=None, now=utcnow()
            )
            await sources_repo.request_sync(s, ["email:INBOX"], utcnow(), None)
        await services.notifier.notify("sources")

        async def mail_indexed() -> bool:
            return bool(await services.search.search("hengda", SearchFilters(), 5))

        await wait_until(mail_indexed, timeout=30, what="the synced mail in the search index")

        await say(w, QUESTION)
        [answer] = await replies(w, 1)
        assert answer == "Li Wei owns it; we picked Hengda (mail from Wang Fang)."
        assert "Wang Fang" in in_dm["search"] and "[rec-" in in_dm["search"]
        assert "mail from Wang Fang <wang.fang@example.com>" in in_dm["original"]
        assert DECISION in in_dm["original"]
        await all_delivered(w)

        in_group["mail_ref"] = REF.findall(in_dm["search"])[0]
        model.add(
            "bot",
            send("memory_search", {"query": "packaging supplier contract"}),
            read_a_hit(in_group),
            answer_from_what_was_read(in_group),
            sleep_step,
        )
        # Something the group said earlier, so its search has something of its own to find.
        async with services.db.write() as s:
            await sources_repo.ensure(
                s,
                name="feishu:oc_group",
                kind="feishu",
                scope="group:oc_group",
                title="Team",
                now=utcnow(),
            )
            await source_records.insert_records(s, [NewRecord(
                "feishu:oc_group", "om_agenda", "group:oc_group",
                "packaging supplier contract is on Friday's agenda", utcnow(), author="ou_member",
                title="Team")], utcnow())  # fmt: skip

        async def group_indexed() -> bool:
            only_group = SearchFilters(scopes=["group:oc_group"])
            return bool(await services.search.search("agenda", only_group, 5))

        await wait_until(group_indexed, what="the group's earlier message in the search index")
        await say_in_group(w, QUESTION)
        answers = await replies(w, 2)
        assert answers[1] == "I found nothing about that here."
        assert "chat message" in in_group["search"]  # the group finds its own words
        for shown in (in_group["search"], in_group["original"]):
            assert "Hengda" not in shown and "Li Wei" not in shown, shown
        assert "error: no such item here" in in_group["original"]

"""Red team: nothing of the owner's DM, mail or tasks reaches anyone else.

The owner's DM, mail and task hold marker words (MARKERS). The owner's messages go through
the webhook, the mail is a source record the search follower indexes, and the task is started
by the Bot in the owner's DM (a task Session whose Matter's objective holds a marker, worked
by a task agent whose log is indexed too).

Before anyone else speaks, the owner's DM proves that `/search`, `/matters list`,
`/sync status`, `/status`, the Bot's task tools, its and the task agent's `memory_search` and
the Bot's `memory_original` do find every marker, so no check below can pass by finding nothing
anywhere. Then someone else — an
admin or a member in the group, ou_user in their own DM as a non-admin and as an admin — tries
every slash command with sensible and hostile arguments, and a scripted model makes the Bot
call every Bot tool and the task agent of a Matter started there call every task-agent tool.
No marker may show: not in a reply, not in an outbox row for another chat, not in any prompt
or tool result the model is shown outside the owner's DM; refused commands change nothing.
Last, the owner shares the mail with the group (`/sync share email:INBOX`): the group then
finds the mail, and still nothing of the owner's DM or task, and no longer once unshared.

The probes spell each marker as someone searching would type it (PROBES: lower case, or the
Chinese phrase as two words). Search folds case and cuts Chinese into words and bigrams, so the
probes find the markers (the positive control shows it), but an attacker's own messages —
which their chat may legitimately find again — never contain a marker: any marker seen outside
the owner's DM came from the owner's data.

One world per database serves the module: the owner's secrets are put in place and proven
once, and each test plays one attacker against them. Coverage checks itself: each test asserts
that the commands it tried are every command the Assistant registers and the tools the model
called are every Bot tool and every task-agent tool, so a command or tool added later without
a red-team case fails here.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from sqlalchemy import func, select

from bot.actions.toolsets import install_task_action_tools
from bot.assistant.access import Role
from bot.assistant.component import Assistant
from bot.llm.scripted import PlannedReply, ScriptedProvider
from bot.llm.types import Completion, Message, ToolSpec
from bot.matters.service import MatterService
from bot.matters.tools import matter_tools
from bot.workhub.candidates import candidate_ref
from storage.models import (
    Action,
    ActionPermission,
    Admin,
    DiscoveryState,
    ForgetRequest,
    InboxItem,
    IndexEntry,
    Matter,
    MemoryIndex,
    OutboxMessage,
    OwnerChat,
    OwnerSignInState,
    OwnerToken,
    Session,
    SessionEvent,
    SessionSummary,
    Source,
    SourceRecord,
    SourceShare,
)
from storage.repos import discovery as discovery_repo
from storage.repos import memory_indexes as index_repo
from storage.repos import source_records
from storage.repos import sources as source_repo
from storage.repos.source_records import NewRecord
from storage.search import SearchFilters
from storage.types import utcnow
from tests import databases
from tests.apps import make_settings, running_app
from tests.assistant.support import all_delivered, last_user_text, say
from tests.fakes import FeishuEventSender, FeishuFake, Mention
from tests.feishu_world import ENCRYPT_KEY, OWNER, VERIFICATION_TOKEN, FeishuWorld
from tests.matters.routed_model import APPROVE, RoutedModel, resolve_step, role_of, send
from tests.seed import record_of
from tests.smtp_server import SmtpServer, smtp_server
from tests.waiting import wait_until

MARKERS = ("OWNERDMMARKER", "OWNERMAILMARKER", "OWNERTASKMARKER", "机密预算")
PROBES = {
    "OWNERDMMARKER": "ownerdmmarker",
    "OWNERMAILMARKER": "ownermailmarker",
    "OWNERTASKMARKER": "ownertaskmarker",
    "机密预算": "机密 预算",
}
MAIL_MARKERS = ("OWNERMAILMARKER", "机密预算")  # what the mail holds
OWNER_DM_TEXT = "remember OWNERDMMARKER: the launch moves to May"
MAIL_TEXT = "OWNERMAILMARKER: the 机密预算 for next year is 3M"
OWNER_TASK_REQUEST = "start a new task: prepare the OWNERTASKMARKER board deck"
OWNER_TASK_TITLE = "OWNERTASKMARKER board deck"
# What attackers ask the Bot: the candidates' search evidence is for the user's words.
ASKING = "what does the owner have on " + ", ".join(PROBES.values())
OWNER_DM, DM, GROUP = "oc_owner_dm", "oc_dm", "oc_group"
ADMIN, MEMBER, USER = "ou_admin", "ou_member", "ou_user"
# The owner's sources as /sync status names them in the owner's DM.
OWNER_SOURCE_NAMES = ("email:INBOX", f"feishu:{OWNER_DM}")
NOT_SHARING = "not permitted: only the owner shares sources"
CHATS_OWNER_ONLY = "not permitted: only the owner chooses their chats, in their DM with me"
OWNER_ONLY = "not permitted: only the owner approves or allows actions"
# Every way to approve or allow an action: refused to anyone but the owner.
ACTION_COMMANDS = (
    "/approve 1",
    "/approve #2",
    "/reject 1",
    "/allow send_message here",
    "/allow send_message",
    "/allow create_event",
    "/allow cancel_event here",
    "/allow list",
    "/allow revoke 1",
)
# Every way to have the assistant forget: refused to anyone but the owner in their DM.
FORGET_COMMANDS = (
    "/forget source email confirm",
    f"/forget chat {OWNER_DM} confirm",
    f"/forget chat {GROUP} confirm",
    "/forget person ou_owner confirm",
    "/forget between 2020-01-01 2030-01-01 confirm",
    "/forget source email",
    "/forget status",
)
LATER = utcnow() + timedelta(days=2)  # a scheduled message's time: never past during the run
OWNER_INDEX = "ownerindex"  # an index made in the owner's DM, over everything
NO_OWNER_INDEX = f"No index named {OWNER_INDEX!r}."

SLEEP = send("sleep", {})
ALL_COMMANDS = {c.name for c in Assistant().commands.visible_to(Role.OWNER)}
BOT_TOOLS = set(Assistant().tools.names())
AGENT_TOOLS = set(matter_tools([install_task_action_tools]).names())  # as bot/runtime.py

Step = Any  # a PlannedReply, or a callable of the messages returning one (maybe awaitable)


def each_probe(tool: str, argument: str) -> PlannedReply:
    """One model step calling `tool` once per probe."""
    return ScriptedProvider.tool_calls(*((tool, {argument: p}) for p in PROBES.values()))


def wait_an_hour(revision: int) -> Callable[[list[Message]], PlannedReply]:
    """A wait settle whose wake is set when the agent asks (an hour ahead: never "past")."""

    def step(_messages: list[Message]) -> PlannedReply:
        return send(
            "settle",
            {
                "expected_revision": revision,
                "disposition": "wait",
                "reason": "nothing more to do now",
                "summary": "looked around; waiting for the next request",
                "wakes": [(utcnow() + timedelta(hours=1)).isoformat()],
                "waiting_for": "the next request",
            },
        )

    return step


def tool_output(messages: Sequence[Message], name: str) -> list[str]:
    """What the model was shown as results of `name` (the data framing stripped)."""
    return [
        (m.content or "").split("\n", 1)[1].rsplit("\n", 1)[0]
        for m in messages
        if m.role == "tool" and m.name == name
    ]


def read_every_original(w: FeishuWorld) -> Callable[[list[Message]], Awaitable[PlannedReply]]:
    """One model step reading every stored original by ref (every synced record, every
    Session log line): refs are short and guessable, so every one must be checked."""

    async def step(_messages: list[Message]) -> PlannedReply:
        async with w.app.services.db.read() as s:
            records = (await s.scalars(select(SourceRecord.id))).all()
            lines = (await s.execute(select(SessionEvent.session_id, SessionEvent.seq))).all()
        refs = [f"rec-{seq}" for seq in records] + [f"log-{sid}-{seq}" for sid, seq in lines]
        return ScriptedProvider.tool_calls(*(("memory_original", {"ref": r}) for r in refs))

    return step


def reply_to_every_record(
    w: FeishuWorld,
) -> Callable[[list[Message]], Awaitable[PlannedReply]]:
    """One model step (a turn has at most 10) replying by mail to every stored record by its
    ref (the owner's mail among them): a reply must neither reach nor reveal a mail the asker
    cannot see."""

    async def step(_messages: list[Message]) -> PlannedReply:
        async with w.app.services.db.read() as s:
            records = (await s.scalars(select(SourceRecord.id))).all()
        return ScriptedProvider.tool_calls(
            *(
                ("reply_email", {"mail": f"rec-{r}", "body": "ok", "reason": "asked"})
                for r in records
            ),
        )

    return step


def candidate_names(listing: str) -> set[str]:
    return {c["name"] for c in json.loads(listing)["candidates"]}


# ---- the model: one script for the whole app, recording everything it is shown ------------


@dataclass
class Shown:
    label: str  # "owner" (the owner's DM and task) or "attack" (anything after, anywhere)
    role: str
    messages: list[Message]


class RedTeamModel(RoutedModel):
    """RoutedModel recording every prompt with its label. The Bot sleeps and the reviewer
    approves when the test scripted nothing; each task agent follows a plan of its own, chosen
    by the label current when its Matter first runs (the owner's task, or an attacker's)."""

    def __init__(self, plans: dict[str, Callable[[], list[Step]]]) -> None:
        super().__init__()
        self.plans = plans
        self.label = "owner"
        self.shown: list[Shown] = []
        self.matter_plans: dict[int, tuple[str, deque[Step]]] = {}
        self.called: dict[str, set[str]] = {"bot": set(), "agent": set()}
        self.problems: list[str] = []

    def _plan_of(self, messages: Sequence[Message]) -> tuple[int, str, deque[Step]]:
        found = re.search(r"Matter #(\d+)", messages[1].content or "")
        assert found, "a task agent's prompt names its Matter"
        matter_id = int(found.group(1))
        if matter_id not in self.matter_plans:
            self.matter_plans[matter_id] = (self.label, deque(self.plans[self.label]()))
        return (matter_id, *self.matter_plans[matter_id])

    async def _agent_step(self, messages: list[Message]) -> PlannedReply:
        matter_id, _label, plan = self._plan_of(messages)
        if not plan:
            self.problems.append(f"the agent of Matter #{matter_id} ran past its plan")
            return ScriptedProvider.text("nothing to do")
        return await resolve_step(plan.popleft(), messages)

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Completion:
        role = role_of(messages)
        label = self.label
        if role == "agent":
            label = self._plan_of(messages)[1]
            self.scripts["agent"].append(self._agent_step)
        elif role == "bot" and not self.scripts["bot"]:
            self.scripts["bot"].append(SLEEP)
        elif role == "review" and not self.scripts["review"]:
            self.scripts["review"].append(APPROVE)
        self.shown.append(Shown(label, role, list(messages)))
        completion = await super().complete(
            messages, tools, max_tokens=max_tokens, temperature=temperature
        )
        if label == "attack" and role in self.called:
            self.called[role] |= {call.name for call in completion.tool_calls}
        return completion


# Every action tool, called once: by the Bot in `bot_tour` and by the task agent it starts.
ACTIONS = ScriptedProvider.tool_calls(
    ("send_message", {"to": OWNER_DM, "text": "a note", "reason": "asked to"}),
    (
        "schedule_message",
        {"to": GROUP, "text": "a later note", "at": LATER.isoformat(), "reason": "asked to"},
    ),
    (
        "create_event",
        {
            "title": "a meeting",
            "start": LATER.isoformat(),
            "end": (LATER + timedelta(minutes=30)).isoformat(),
            "attendees": ADMIN,
            "reason": "asked to",
        },
    ),
    (
        "move_event",
        {
            "event": "evt_owners",
            "start": LATER.isoformat(),
            "end": (LATER + timedelta(hours=1)).isoformat(),
            "reason": "asked to",
        },
    ),
    ("cancel_event", {"event": "evt_owners", "reason": "asked to"}),
    ("create_task", {"summary": "a task", "due": LATER.isoformat(), "reason": "asked"}),
    ("complete_task", {"task": "a task", "reason": "asked to"}),
    ("create_document", {"title": "a doc", "text": "some text", "reason": "asked"}),
    (
        "send_email",
        {"to": "cfo@example.com", "subject": "budget", "body": "send it", "reason": "asked"},
    ),
    ("reply_email", {"mail": "rec-1", "body": "ok", "reason": "asked"}),
)


def attack_agent_plan() -> list[Step]:
    """The task agent of a Matter started outside the owner's DM calls every tool it has."""
    return [
        send("matter_read", {}),
        send("events_read", {}),
        each_probe("memory_search", "query"),
        send("memory_original", {"ref": "rec-1"}),
        send("memory_index_read", {"name": OWNER_INDEX}),
        send("checkpoint", {"state": "searched what this chat may see"}),
        send("message_bot", {"kind": "progress", "text": "searched; nothing of note"}),
        ACTIONS,  # proposed to the owner as the person who asked, never run (`nothing_acted`)
        wait_an_hour(1),
    ]


def owner_agent_plan(w: FeishuWorld) -> Callable[[], list[Step]]:
    """The owner's task agent: once every marker is in the index, it searches for each (the
    positive control of memory_search), checkpoints and waits."""

    async def once_indexed(_messages: list[Message]) -> PlannedReply:
        async def all_found() -> bool:
            for probe in PROBES.values():
                if not await w.app.services.search.search(probe, None, 5):
                    return False
            return True

        await wait_until(all_found, what="every marker to be indexed for search")
        return send("events_read", {})

    return lambda: [
        once_indexed,
        each_probe("memory_search", "query"),
        send("memory_index_read", {"name": OWNER_INDEX}),
        send("checkpoint", {"state": "OWNERTASKMARKER outline ready"}),
        wait_an_hour(1),
    ]


# ---- driving the world ---------------------------------------------------------------------


@dataclass(frozen=True)
class Seat:
    """Someone speaking somewhere."""

    sender: str
    chat_id: str
    group: bool

    def __str__(self) -> str:
        return f"{self.sender} in {self.chat_id}"


IN_OWNER_DM = Seat(OWNER, OWNER_DM, group=False)


async def speak(w: FeishuWorld, seat: Seat, text: str) -> str:
    """Send `text` as the seat (in a group, addressed to the Bot); the message id."""
    if seat.group:
        event = await say(
            w,
            f"@_user_1 {text}",
            sender=seat.sender,
            chat_id=seat.chat_id,
            chat_type="group",
            mentions=[Mention(open_id="ou_bot", name="Maka")],
        )
    else:
        event = await say(w, text, sender=seat.sender, chat_id=seat.chat_id)
    return str(event["event"]["message"]["message_id"])


def reply_text(content: dict[str, Any]) -> str:
    if "text" in content:
        return str(content["text"])
    if "markdown" in content:  # a card (bot/channels/cards.py)
        return f"{content['title']}\n{content['markdown']}"
    return "\n\n".join([str(content.get("title") or ""), *map(str, content["paragraphs"])])


async def commands(
    w: FeishuWorld, seat: Seat, texts: Sequence[str], ids: dict[str, str] | None = None
) -> dict[str, str]:
    """Each command's reply (and in `ids`, each command's message id). A command is answered
    as a reply to its message; the answer is read from the outbox (what will be sent), so the
    test does not wait out Feishu's per-chat rate limit. What the fake did receive is checked
    for markers too."""
    assert len(set(texts)) == len(texts)
    message_ids = await asyncio.gather(*(speak(w, seat, text) for text in texts))
    ids = ids if ids is not None else {}
    ids.update(zip(texts, message_ids, strict=True))
    answers: dict[str, str] = {}

    async def answered() -> bool:
        async with w.app.services.db.read() as s:
            rows = (
                await s.scalars(
                    select(OutboxMessage).where(OutboxMessage.reply_to.in_(message_ids))
                )
            ).all()
        by_message = {row.reply_to: reply_text(row.content) for row in rows}
        answers.update({t: by_message[i] for t, i in ids.items() if i in by_message})
        return len(answers) == len(texts)

    await wait_until(answered, timeout=90, what=f"answers to {len(texts)} commands from {seat}")
    return answers


async def matter_of(w: FeishuWorld, title: str) -> Matter | None:
    async with w.app.services.db.read() as s:
        return await s.scalar(
            select(Matter)
            .join(Session, Session.id == Matter.session_id)
            .where(Session.name == title)
            .execution_options(populate_existing=True)
        )


async def settled_waiting(w: FeishuWorld, title: str) -> Matter:
    """The Matter of the task `title` once its turn settled (waiting), with every notice it
    sent the Bot handled."""

    async def waiting() -> bool:
        m = await matter_of(w, title)
        return m is not None and m.status == "waiting"

    await wait_until(waiting, timeout=30, what=f"the Matter of {title!r} to wait")
    await all_delivered(w)
    matter = await matter_of(w, title)
    assert matter is not None
    return matter


@dataclass
class Owner:
    matter_id: int
    task_session_id: int
    set_id: str  # the candidate set the owner's Bot was shown, and the task's ref in it
    ref: str


async def the_owners_secrets(w: FeishuWorld, model: RedTeamModel) -> Owner:
    """The owner's mail, DM and task, each proven findable from the owner's DM."""
    db, now = w.app.services.db, utcnow()
    async with db.write() as s:
        await source_repo.ensure(
            s, name="email:INBOX", kind="email", scope="mail:INBOX", title="INBOX", now=now
        )
        await source_records.insert_records(
            s,
            [
                NewRecord(
                    source="email:INBOX",
                    external_id="budget-1",
                    scope="mail:INBOX",
                    text=MAIL_TEXT,
                    sent_at=now,
                    author="cfo@example.com",
                    title="Budget",
                )
            ],
            now,
        )
    await speak(w, IN_OWNER_DM, OWNER_DM_TEXT)  # the Bot just sleeps
    await all_delivered(w)
    async with db.write() as s:  # an index made in the owner's DM, paused: no agent runs it
        index = await index_repo.create(
            s, name=OWNER_INDEX, criteria="budgets", scopes=None, conversation_id=None,
            created_by=OWNER, interval_seconds=3600, now=now,
        )  # fmt: skip
        assert index is not None
        index.paused = True
        mail = await record_of(s, "email:INBOX", "budget-1")
        assert mail is not None
        written = await index_repo.write_entry(
            s, index.id, key="budget", text=MAIL_TEXT, refs=[mail.id], expected_revision=0,
            now=now,
        )  # fmt: skip
        assert written.ok
        # The owner's discovery notebook and a finding: never shown outside the owner's DM.
        await discovery_repo.append_note(
            s, round_id=None, author="discovery", kind="situation", text=MAIL_TEXT,
            refs=[f"rec-{mail.id}"], due_on=None, now=now,
        )  # fmt: skip
    model.add(
        "bot",
        send("tasks_create", {"title": OWNER_TASK_TITLE, "text": "the owner's board deck"}),
        send("send_user", {"text": "Started."}),
        SLEEP,
    )
    await speak(w, IN_OWNER_DM, OWNER_TASK_REQUEST)
    matter = await settled_waiting(w, OWNER_TASK_TITLE)
    assert "OWNERTASKMARKER" in matter.objective

    async def summarized() -> bool:
        """The summary job of the owner's task is done (the summary model reads the owner's
        task: it must not run later, under the attack's label)."""
        async with db.read() as s:
            row = await s.get(SessionSummary, matter.session_id, populate_existing=True)
        return row is not None and row.summarized_at_count >= row.requested_at_count >= 1

    async def task_log_indexed() -> bool:
        only_the_task = SearchFilters(session_ids=[str(matter.session_id)])
        return bool(await w.app.services.search.search("ownertaskmarker", only_the_task, 5))

    await wait_until(summarized, what="the summary job of the owner's task")
    await wait_until(task_log_indexed, what="the owner's task log in search")

    # Positive control: from the owner's DM every read path finds every marker.
    replies = await commands(
        w,
        IN_OWNER_DM,
        [*(f"/search {p}" for p in PROBES.values()), "/matters list", "/sync status", "/status"],
    )
    for marker, probe in PROBES.items():
        assert marker in replies[f"/search {probe}"], replies[f"/search {probe}"]
    assert f"#{matter.id} waiting: {OWNER_TASK_REQUEST}" in replies["/matters list"]
    assert "email:INBOX" in replies["/sync status"]
    assert "calls today" in replies["/status"]
    searched = [
        out
        for shown in model.shown
        if shown.role == "agent"
        for name in ("memory_search", "memory_index_read")
        for out in tool_output(shown.messages, name)
    ]
    assert all(any(marker in out for out in searched) for marker in MARKERS), searched

    # The Bot's recall in the owner's DM finds the mail and reads it whole.
    model.add(
        "bot",
        each_probe("memory_search", "query"),
        read_every_original(w),
        send("memory_index_read", {"name": OWNER_INDEX}),
        SLEEP,
    )
    await speak(w, IN_OWNER_DM, "what did the cfo write about the budget?")
    await all_delivered(w)
    recalled = [
        out
        for shown in model.shown
        if shown.role == "bot"
        for name in ("memory_search", "memory_original")
        for out in tool_output(shown.messages, name)
    ]
    assert all(any(marker in out for out in recalled) for marker in MARKERS), recalled
    [index_read] = [
        out
        for shown in model.shown
        if shown.role == "bot"
        for out in tool_output(shown.messages, "memory_index_read")
    ]
    assert "OWNERMAILMARKER" in index_read, index_read

    seen: dict[str, str] = {}

    def pick_the_task(messages: list[Message]) -> PlannedReply:
        [listing] = tool_output(messages, "tasks_candidates")
        body = json.loads(listing)
        [task] = [c for c in body["candidates"] if c["name"] == OWNER_TASK_TITLE]
        seen.update(set_id=body["candidate_set_id"], ref=task["ref"])
        return send("tasks_status", {"candidate_ref": task["ref"]})

    def status_shown(messages: list[Message]) -> PlannedReply:
        [seen["status"]] = tool_output(messages, "tasks_status")
        return SLEEP

    model.add("bot", send("tasks_candidates", {}), pick_the_task, status_shown)
    await speak(w, IN_OWNER_DM, "how is the ownertaskmarker deck going?")
    await all_delivered(w)
    assert "OWNERTASKMARKER" in seen["status"]
    assert not model.problems, model.problems
    model.label = "attack"  # from here on, nothing the model is shown may hold a marker
    return Owner(matter.id, matter.session_id, seen["set_id"], seen["ref"])


# ---- the world, once per database ----------------------------------------------------------


async def untouched_task(w: FeishuWorld, owner: Owner) -> tuple[Any, ...]:
    """The owner's Matter and what its task Session was handed: no one else may change them."""
    async with w.app.services.db.read() as s:
        matter = await s.get(Matter, owner.matter_id, populate_existing=True)
        assert matter is not None
        handed = await s.scalar(
            select(func.count(InboxItem.id)).where(InboxItem.session_id == owner.task_session_id)
        )
    return (matter.status, matter.revision, matter.objective, matter.state_text, handed)


@dataclass
class RedTeam:
    w: FeishuWorld
    model: RedTeamModel
    owner: Owner
    owners_task: tuple[Any, ...]  # the owner's task as the owner left it (untouched_task)
    smtp: SmtpServer  # where the mail actions would send: it must get nothing
    first_prompt: int = 0  # where the current test's prompts start in model.shown
    # Messages in the group answered while the owner shared the mail with it: their answers
    # may hold the mail's markers.
    asked_while_mail_shared: set[str] = field(default_factory=set)

    def prompts(self, role: str) -> list[list[Message]]:
        """What the model was shown for `role` during the current test."""
        return [s.messages for s in self.model.shown[self.first_prompt :] if s.role == role]


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def red_team_database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path
) -> str:
    """A migrated, empty database of each kind, as `database_url` makes them (for the module)."""
    if request.param == "sqlite":
        return databases.copy_sqlite(sqlite_template, tmp_path_factory.mktemp("red") / "maka.db")
    url: str = request.getfixturevalue("postgres_run_database")
    asyncio.run(databases.truncate_postgres(url))
    return url


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def red_team_world(
    red_team_database: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[RedTeam]:
    """The app on loopback wired to the Feishu fake (as `make_world` builds it) with the
    owner's secrets in place and proven findable from the owner's DM."""
    with smtp_server() as smtp:
        async with _red_team_world(red_team_database, tmp_path_factory, smtp) as team:
            yield team


@asynccontextmanager
async def _red_team_world(
    red_team_database: str, tmp_path_factory: pytest.TempPathFactory, smtp: SmtpServer
) -> AsyncIterator[RedTeam]:
    async with FeishuFake(bot_open_id="ou_bot", bot_name="Maka") as fake:
        fake.add_chat(DM, name="dm", chat_type="p2p", p2p_user=USER)
        fake.add_chat(OWNER_DM, name="owner dm", chat_type="p2p", p2p_user=OWNER)
        fake.add_chat(GROUP, name="team")
        app_id, app_secret = fake.new_app()
        settings = make_settings(
            tmp_path_factory.mktemp("red-team"),
            red_team_database,
            feishu_app_id=app_id,
            feishu_app_secret=app_secret,
            feishu_encrypt_key=ENCRYPT_KEY,
            feishu_verification_token=VERIFICATION_TOKEN,
            feishu_domain=fake.url,
            owner=OWNER,
            admins=[ADMIN],
            open_dms=True,
            bot_debounce=0.0,
            sync_feishu_interval=0,
            smtp_host=smtp.host,
            smtp_port=smtp.port,
            smtp_tls="none",
            smtp_from="owner@example.com",
        )
        plans: dict[str, Callable[[], list[Step]]] = {"attack": attack_agent_plan}
        model = RedTeamModel(plans)
        async with running_app(settings, bot=Assistant(), model_provider=model) as app:
            events = FeishuEventSender(
                f"{app.url}/feishu/events",
                app_id=app_id,
                encrypt_key=ENCRYPT_KEY,
                verification_token=VERIFICATION_TOKEN,
            )
            w = FeishuWorld(fake, app, events)
            plans["owner"] = owner_agent_plan(w)
            owner = await the_owners_secrets(w, model)
            yield RedTeam(w, model, owner, await untouched_task(w, owner), smtp)


@pytest.fixture
def team(red_team_world: RedTeam) -> RedTeam:
    """The module's world, with this test's record of prompts and tool calls started afresh."""
    model = red_team_world.model
    assert not model.scripts["bot"], "an earlier test left Bot steps unplayed"
    red_team_world.first_prompt = len(model.shown)
    model.called = {"bot": set(), "agent": set()}
    return red_team_world


# ---- the attacks ---------------------------------------------------------------------------


async def bot_tour(team: RedTeam, seat: Seat, title: str) -> Matter:
    """The Bot, answering `seat` (who asks about every probe), calls every Bot tool: the
    candidates with search evidence for those words, the owner's task by a forged ref and by
    the owner's own candidate set and ref, then a new task of this chat, whose agent calls
    every task-agent tool. Returns that task's Matter once it waits."""
    owner = team.owner

    def forge_a_ref(messages: list[Message]) -> PlannedReply:
        """Refs are per set and opaque, but their recipe is no secret: forge the owner's task's
        ref in this chat's own (current) set, as a model that guessed the Session id could."""
        set_id = json.loads(tool_output(messages, "tasks_candidates")[-1])["candidate_set_id"]
        forged = candidate_ref(set_id, str(owner.task_session_id))
        return ScriptedProvider.tool_calls(
            ("tasks_status", {"candidate_ref": forged}),
            (
                "tasks_delegate",
                {"candidate_set_id": set_id, "candidate_ref": forged, "text": "for the owner"},
            ),
        )

    team.model.add(
        "bot",
        send("tasks_candidates", {}),  # with evidence for the user's words: every probe
        each_probe("memory_search", "query"),
        read_every_original(team.w),
        send("memory_index_read", {"name": OWNER_INDEX}),
        forge_a_ref,
        send("tasks_status", {"candidate_ref": owner.ref}),
        send(
            "tasks_delegate",
            {
                "candidate_set_id": owner.set_id,
                "candidate_ref": owner.ref,
                "text": "add this to the owner's board deck",
            },
        ),
        send("tasks_create", {"title": title, "text": "collect what we said"}),
        ACTIONS,  # outward actions: proposed to the owner, never run (`nothing_acted`)
        reply_to_every_record(team.w),
        send("inbox_check", {}),
        send("send_user", {"text": "On it."}),
        SLEEP,
    )
    await speak(team.w, seat, f"{ASKING}, and start a new task for our notes")
    matter = await settled_waiting(team.w, title)
    async with team.w.app.services.db.read() as s:
        by_agent = (
            await s.scalars(select(Action).where(Action.request_key.like(f"matter:{matter.id}:%")))
        ).all()
    # The agent proposes as the person who asked for the task, whatever it writes.
    assert by_agent and {a.requester for a in by_agent} == {seat.sender}, by_agent
    return matter


def command_cases(owner: Owner, own_matter: int, sender: str, *, admin: bool) -> list[str]:
    """Every command with sensible and hostile arguments. An admin skips what admins may
    legitimately do that changes state (/admins add, /sync feishu: see the group admin's test)."""
    n = owner.matter_id
    cases = [
        "/help",
        "/whoami",
        "/status",
        *(f"/search {probe}" for probe in PROBES.values()),
        f"/search ownerdmmarker scope:dm:{OWNER} mail:INBOX",
        "/matters list",
        f"/matters show {own_matter}",
        f"/matters show {n}",
        f"/matters show #{n}",
        f"/matters pause {n}",
        f"/matters resume {n}",
        f"/matters cancel {n}",
        "/sync status",
        "/sync share email:INBOX",
        f"/sync share feishu:{OWNER_DM}",
        "/sync unshare email:INBOX",
        "/sync share calendar:primary",
        "/sync email",
        "/sync calendar",
        "/sync docs",
        "/sync tasks",
        "/sync share docs:owner",
        "/sync share tasks:owner",
        "/sync chats",
        f"/sync chats add {GROUP}",
        "/sync chats add oc_owners_secret_group",
        "/sync chats remove oc_owners_secret_group",
        "/sync chats now",
        "/sync share chats:oc_owners_secret_group",
        "/admins list",
        f"/admins remove {OWNER}",
        "/index list",
        *(f"/index {a} {OWNER_INDEX}" for a in ("show", "run", "pause", "resume", "drop")),
        "/discovery status",
        "/discovery every 1s",
        *(f"/why {n}" for n in range(1, 6)),
        "/signin",
        "/signout",
        *ACTION_COMMANDS,
        *FORGET_COMMANDS,
        "/actions",
        "/actions show 1",
    ]
    if not admin:
        cases += [f"/discovery {a}" for a in ("on", "off", "run", "quiet 22-8", "budget 1")]
        cases.append("/index create notes what we decided")
        cases += [f"/admins add {sender}", f"/admins remove {ADMIN}", f"/sync feishu {OWNER_DM}"]
    return cases


async def snapshot(team: RedTeam) -> dict[str, Any]:
    """What a refused command must not change."""
    owners_task = await untouched_task(team.w, team.owner)
    async with team.w.app.services.db.read() as s:
        return {
            "admins": sorted((await s.scalars(select(Admin.open_id))).all()),
            "the owner's task": owners_task,
            "matters": sorted((m.id, m.status) for m in (await s.scalars(select(Matter))).all()),
            "shares": sorted(
                (r.source, r.conversation_id) for r in (await s.scalars(select(SourceShare))).all()
            ),
            "indexes": sorted(
                (i.name, i.paused, i.next_check_at)
                for i in (await s.scalars(select(MemoryIndex))).all()
            ),
            "entries": sorted(
                (e.index_id, e.key, e.revision) for e in (await s.scalars(select(IndexEntry))).all()
            ),
            "discovery": [
                (d.enabled, d.interval_seconds, d.budget_tokens, d.run_requested)
                for d in (await s.scalars(select(DiscoveryState))).all()
            ],
            "wanted": sorted(
                (r.name, r.wanted_at) for r in (await s.scalars(select(Source))).all()
            ),
            "sign-in": (
                (await s.scalars(select(OwnerSignInState.state_hash))).all(),
                (await s.scalars(select(OwnerToken.version))).all(),
            ),
            "actions": sorted(
                (a.id, a.state, a.decided_by) for a in (await s.scalars(select(Action))).all()
            ),
            "permissions": sorted(
                (p.id, p.revoked_at) for p in (await s.scalars(select(ActionPermission))).all()
            ),
            "owner chats": sorted((await s.scalars(select(OwnerChat.chat_id))).all()),
            "forget requests": (await s.scalars(select(ForgetRequest.id))).all(),
            "the owner's records": (
                await s.scalars(
                    select(func.count(SourceRecord.id)).where(
                        SourceRecord.source.in_(["email:INBOX", f"feishu:{OWNER_DM}"])
                    )
                )
            ).all(),
        }


async def try_every_command(
    team: RedTeam, seat: Seat, own_matter: int, *, admin: bool
) -> dict[str, str]:
    """Every command from the seat: the owner's task does not exist there, sources cannot be
    shared, admin commands are refused to non-admins, and nothing changes."""
    n = team.owner.matter_id
    cases = command_cases(team.owner, own_matter, seat.sender, admin=admin)
    assert {c.split()[0].removeprefix("/") for c in cases} == ALL_COMMANDS, (
        "a command has no red-team case: add one to command_cases"
    )
    before = await snapshot(team)
    replies = await commands(team.w, seat, cases)
    assert await snapshot(team) == before, f"a command from {seat} changed something"
    for case in (f"/matters {a} {n}" for a in ("show", "pause", "resume", "cancel")):
        assert replies[case] == f"No task #{n}.", (case, replies[case])
    assert replies[f"/matters show #{n}"] == f"No task #{n}."
    assert f"#{n} " not in replies["/matters list"]
    assert replies[f"/matters show {own_matter}"].startswith(f"Task #{own_matter}\n**waiting**")
    shares = (
        "/sync share email:INBOX",
        f"/sync share feishu:{OWNER_DM}",
        "/sync share calendar:primary",
    )
    for case in shares:
        assert replies[case] == NOT_SHARING, (case, replies[case])
    assert replies["/sync unshare email:INBOX"] == NOT_SHARING
    for n in range(1, 6):  # the owner's first inbox items: never explained elsewhere
        assert replies[f"/why {n}"] == f"No message {n} of mine here.", replies[f"/why {n}"]
    assert not any(name in replies["/sync status"] for name in OWNER_SOURCE_NAMES)
    for case in ("/signin", "/signout"):  # the owner's own Feishu sign-in: theirs alone
        assert replies[case].startswith("not permitted: only the owner"), replies[case]
    for case in ACTION_COMMANDS:
        assert replies[case] == OWNER_ONLY, (case, replies[case])
    for case in FORGET_COMMANDS:  # admins: the owner-only line; others: admins only
        assert replies[case].startswith("not permitted: "), (case, replies[case])
    for case in [c for c in cases if c.startswith("/sync chats")]:  # the owner's own chats
        assert replies[case] == CHATS_OWNER_ONLY, (case, replies[case])
    assert replies["/sync share chats:oc_owners_secret_group"] == NOT_SHARING
    if admin:
        assert "usage is shown in the owner's DM" in replies["/status"]
        assert "calls today" not in replies["/status"]
        for probe in PROBES.values():
            assert not replies[f"/search {probe}"].startswith("not permitted")
        assert replies[f"/admins remove {OWNER}"] == f"{OWNER} was not an admin."
        for action in ("show", "run", "pause", "resume", "drop"):
            assert replies[f"/index {action} {OWNER_INDEX}"] == NO_OWNER_INDEX
        assert OWNER_INDEX not in replies["/index list"]
        assert replies["/sync email"].startswith("email is not configured")
        assert "Notebook: 1 notes" in replies["/discovery status"]  # a count, never the text
        assert replies["/discovery every 1s"].startswith("Usage: /discovery")
    else:
        for case in ("/status", "/admins list", f"/admins add {seat.sender}"):
            assert replies[case].startswith("not permitted: /"), (case, replies[case])
        for probe in PROBES.values():
            assert replies[f"/search {probe}"] == "not permitted: /search is for admins"
        for kind in ("email", f"feishu {OWNER_DM}"):
            assert (
                replies[f"/sync {kind}"] == f"not permitted: /sync {kind.split()[0]} is for admins"
            )
        for case in ("/index list", "/index create notes what we decided"):
            assert replies[case] == "not permitted: /index is for admins", replies[case]
        for case in [c for c in cases if c.startswith("/discovery")]:
            assert replies[case] == "not permitted: /discovery is for admins", replies[case]
    return replies


def the_tools_kept_to_this_chat(team: RedTeam, own_tasks: set[str]) -> None:
    """What the Bot's task tools answered: the owner's set and ref are refused, and the
    candidates are only tasks started in this chat."""
    prompts = team.prompts("bot")
    status = {o for p in prompts for o in tool_output(p, "tasks_status")}
    delegate = {o for p in prompts for o in tool_output(p, "tasks_delegate")}
    listings = {o for p in prompts for o in tool_output(p, "tasks_candidates")}
    assert status and all("candidate_unavailable" in o for o in status), status
    assert any("candidate_set_stale" in o for o in delegate), delegate  # the owner's set
    assert any("candidate_unavailable" in o for o in delegate), delegate  # a forged ref
    assert all("candidate_set_stale" in o or "candidate_unavailable" in o for o in delegate)
    assert listings
    for listing in listings:
        assert candidate_names(listing) <= own_tasks, listing


async def nothing_leaked(team: RedTeam) -> None:
    """No marker outside the owner's DM: not in replies, outbox rows or anything the model was
    shown; and the owner's task is as the owner left it."""
    w, model = team.w, team.model
    leaks: list[str] = []

    def check(where: str, text: str, reply_to: str | None = None) -> None:
        shared = MAIL_MARKERS if reply_to in team.asked_while_mail_shared else ()
        leaks.extend(
            f"{marker} in {where}: {text[:300]!r}"
            for marker in MARKERS
            if marker in text and marker not in shared
        )

    for sent in w.fake.sent:
        if sent.chat_id != OWNER_DM:
            body = json.dumps(sent.body, ensure_ascii=False)
            check(f"a reply in {sent.chat_id}", body, sent.reply_to)
    async with w.app.services.db.read() as s:
        rows = (await s.scalars(select(OutboxMessage))).all()
    for row in rows:
        if row.chat_id != OWNER_DM:
            content = json.dumps(row.content, ensure_ascii=False)
            check(f"an outbox row for {row.chat_id}", content, row.reply_to)
    for shown in model.shown:
        if shown.label != "attack":
            continue
        for m in shown.messages:
            text = " ".join([m.content or "", *(c.arguments_json() for c in m.tool_calls)])
            check(f"a {m.role} message shown to the {shown.role} model", text)
    assert not leaks, "\n".join(leaks)
    assert not model.problems, model.problems
    await nothing_acted(team)
    assert await untouched_task(w, team.owner) == team.owners_task


async def nothing_acted(team: RedTeam) -> None:
    """The attackers' action tools proposed to the owner and nothing ran: every action waits
    (or expired), none was approved, and no message went out under an action's key."""
    async with team.w.app.services.db.read() as s:
        rows = (await s.scalars(select(Action))).all()
    assert all(a.state in ("proposed", "expired") and a.decided_by is None for a in rows), [
        (a.id, a.state, a.decided_by) for a in rows
    ]
    assert not [m for m in team.w.fake.sent if (m.uuid or "").startswith("maka-action-")]
    assert not team.w.fake.events and not team.w.fake.event_keys  # no calendar was touched
    assert not team.w.fake.tasks and not team.w.fake.docs  # no task or document made
    assert team.smtp.tried == 0  # no mail sent


def every_tool_was_tried(team: RedTeam) -> None:
    called = team.model.called
    assert called["bot"] == BOT_TOOLS, "a Bot tool has no red-team step: add one to bot_tour"
    assert called["agent"] == AGENT_TOOLS, "a task-agent tool has no step: add one"


# ---- the tests -----------------------------------------------------------------------------


def test_every_command_and_tool_has_a_red_team_case() -> None:
    """Without a database: the command cases and the agent's plan name every registered
    command and task-agent tool (each attack also checks what it actually called)."""
    owner = Owner(matter_id=1, task_session_id=1, set_id="cs_x", ref="t_x")
    for admin in (True, False):
        cases = command_cases(owner, 2, MEMBER, admin=admin)
        assert {c.split()[0].removeprefix("/") for c in cases} == ALL_COMMANDS
    agent_steps = [s for s in attack_agent_plan() if isinstance(s, PlannedReply)]
    assert {c[0] for s in agent_steps for c in s.calls} | {"settle"} == AGENT_TOOLS


@pytest.mark.asyncio(loop_scope="module")
async def test_an_admin_in_a_group_never_sees_the_owners_dm_mail_or_tasks(team: RedTeam) -> None:
    seat = Seat(ADMIN, GROUP, group=True)
    mine = await bot_tour(team, seat, "team notes (admin)")
    await try_every_command(team, seat, mine.id, admin=True)
    # An admin may have any chat synced, the owner's DM too; its history still stays there.
    [requested] = (await commands(team.w, seat, [f"/sync feishu {OWNER_DM}"])).values()
    assert requested.startswith(f"Feishu history of {OWNER_DM} sync requested")

    async def synced() -> bool:
        async with team.w.app.services.db.read() as s:
            row = await s.scalar(select(Source).where(Source.name == f"feishu:{OWNER_DM}"))
        return row is not None and row.last_success_at is not None

    await wait_until(synced, what="the sync of the owner's DM")
    after = await commands(team.w, seat, ["/sync status", "/search launch ownerdmmarker"])
    assert not any(name in after["/sync status"] for name in OWNER_SOURCE_NAMES)
    the_tools_kept_to_this_chat(team, {"team notes (admin)"})
    await nothing_leaked(team)
    every_tool_was_tried(team)


@pytest.mark.asyncio(loop_scope="module")
async def test_a_member_in_a_group_never_sees_the_owners_dm_mail_or_tasks(team: RedTeam) -> None:
    seat = Seat(MEMBER, GROUP, group=True)
    mine = await bot_tour(team, seat, "team notes (member)")
    await try_every_command(team, seat, mine.id, admin=False)
    the_tools_kept_to_this_chat(team, {"team notes (admin)", "team notes (member)"})
    await nothing_leaked(team)
    every_tool_was_tried(team)


@pytest.mark.asyncio(loop_scope="module")
async def test_another_persons_dm_never_sees_the_owners_dm_mail_or_tasks_even_as_an_admin(
    team: RedTeam,
) -> None:
    w, model, owner = team.w, team.model, team.owner
    seat = Seat(USER, DM, group=False)
    mine = await bot_tour(team, seat, "my notes")
    await try_every_command(team, seat, mine.id, admin=False)

    # A turn holding only a background notice (no message) acts as the DM's own participant,
    # never as the owner: the candidates are this DM's tasks.
    shown: dict[str, str] = {}

    def look(messages: list[Message]) -> PlannedReply:
        [shown["listing"]] = tool_output(messages, "tasks_candidates")
        shown["batch"] = last_user_text(messages)
        return send("tasks_status", {"candidate_ref": owner.ref})

    model.add("bot", send("tasks_candidates", {}), look, SLEEP)
    service = MatterService(w.app.services.db, w.app.services.notifier)
    await service.report(mine.id, "progress", "halfway through the notes", "red-team:notice")
    await all_delivered(w)
    assert "task_update" in shown["batch"] and "[m1]" not in shown["batch"], shown["batch"]
    assert candidate_names(shown["listing"]) == {"my notes"}

    # The owner makes ou_user an admin: their DM still sees only itself.
    [made] = (await commands(w, IN_OWNER_DM, [f"/admins add {USER}"])).values()
    assert made == f"{USER} is now an admin."
    await try_every_command(team, seat, mine.id, admin=True)
    the_tools_kept_to_this_chat(team, {"my notes"})
    await nothing_leaked(team)
    every_tool_was_tried(team)


@pytest.mark.asyncio(loop_scope="module")
async def test_mail_the_owner_shares_with_the_group_shows_there_and_nothing_else_does(
    team: RedTeam,
) -> None:
    w = team.w
    admin, owner_there = Seat(ADMIN, GROUP, group=True), Seat(OWNER, GROUP, group=True)
    [refused] = (await commands(w, admin, ["/sync share email:INBOX"])).values()
    assert refused == NOT_SHARING
    [shared] = (await commands(w, owner_there, ["/sync share email:INBOX"])).values()
    assert shared.startswith("email:INBOX is shared with this chat")
    asked: dict[str, str] = {}
    try:
        cases = [*(f"/search {p}" for p in PROBES.values()), "/sync status", "/matters list"]
        replies = await commands(w, admin, cases, asked)
        team.asked_while_mail_shared |= set(asked.values())
        made = await commands(w, admin, ["/index create groupmail mail and chat here"])
        assert "created over this chat" in made["/index create groupmail mail and chat here"]
    finally:
        [unshared] = (await commands(w, owner_there, ["/sync unshare email:INBOX"])).values()
    assert unshared == "email:INBOX is no longer shared with this chat."
    assert all(m in replies[f"/search {PROBES[m]}"] for m in MAIL_MARKERS), replies
    assert "email:INBOX" in replies["/sync status"]
    assert f"feishu:{OWNER_DM}" not in replies["/sync status"]
    assert f"#{team.owner.matter_id} " not in replies["/matters list"]
    # Once unshared, the mail is gone from the group again.
    again = await commands(w, admin, ["/search ownermailmarker", "/search 预算 机密"])
    assert not any(m in answer for m in MAIL_MARKERS for answer in again.values()), again
    # An index made while the mail was shared covers it: once unshared, the group loses it.
    gone = await commands(w, admin, ["/index list", "/index show groupmail"])
    assert "groupmail" not in gone["/index list"], gone
    assert gone["/index show groupmail"] == "No index named 'groupmail'.", gone
    await nothing_leaked(team)

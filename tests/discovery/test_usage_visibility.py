"""Usage figures are the owner's costs: `/discovery status` and `/status` show discovery's
tokens (and a skip's figures), model and Feishu API usage only in the owner's DM; an admin
in a group or in their own DM gets the rest of the answer and where to look (both
databases, through the webhook and the Feishu stand-in)."""

from __future__ import annotations

from storage.models import ModelCall
from storage.repos import discovery as repo
from storage.types import utcnow
from tests.assistant.support import bot_world, replies, say, say_in_group
from tests.feishu_world import WorldFactory

ADMIN = "ou_admin"
TOKENS = "4321"  # discovery's tokens today: a figure that appears nowhere else


async def test_usage_figures_reach_only_the_owners_dm(make_world: WorldFactory) -> None:
    async with bot_world(make_world, None, admins=[ADMIN]) as w:
        now = utcnow()
        async with w.app.services.db.write() as s:
            s.add(ModelCall(purpose="judgement_turn", model="m", input_tokens=int(TOKENS),
                            output_tokens=0, created_at=now))  # fmt: skip
            await repo.record_skip(s, f"daily budget spent ({TOKENS} of 1000 tokens)", now)
        asked = [("admin in a group", "oc_group"), ("admin in their DM", "oc_dm"),
                 ("owner in their DM", "oc_owner_dm")]  # fmt: skip
        for command in ("/discovery status", "/status"):
            await say_in_group(w, command, sender=ADMIN)
            await say(w, command, sender=ADMIN)
            await say(w, command)
        answers = await replies(w, 6)
    by_chat: dict[str, list[str]] = {}
    for sent in w.fake.sent:
        by_chat.setdefault(sent.chat_id, []).append(sent.text or "")
    for who, chat in asked:
        discovery, status = by_chat[chat]
        assert discovery.startswith("Discovery: off"), (who, discovery)
        if chat == "oc_owner_dm":
            assert f"Tokens today: {TOKENS} of 50000" in discovery
            assert f"daily budget spent ({TOKENS} of 1000 tokens)" in discovery
            assert "Feishu API calls:" in status and "tokens in" in status
            continue
        assert "Tokens today: usage is shown in the owner's DM" in discovery, (who, discovery)
        assert "Recent skips:" in discovery and "daily budget spent" in discovery
        assert TOKENS not in discovery and "tokens in" not in status, (who, status)
        assert "Feishu API calls" not in status and "usage is shown in the owner's DM" in status
    assert len(answers) == 6

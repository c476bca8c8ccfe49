"""A finding's buttons ("Track as a task", "Not useful": bot/channels/cards.py
`verdict_buttons`, under the Bot's message telling the owner a finding) and what their clicks
record (`record_verdict`).

Only the owner's click counts: a finding is told to the owner alone, and their verdict is what
discovery learns from. Each click is feedback of kind `button` (bot/discovery/delivery.py
`record_feedback`), once per click. "Track" also becomes the owner's request for a task, which
the model acts on the way any request for a new task is (WorkHub's gate reads the words).
"""

from __future__ import annotations

from bot.discovery.delivery import BUTTON, record_feedback
from bot.parsing import parse_id
from bot.services import Services
from storage.models import Finding
from storage.types import utcnow

NOT_USEFUL = "not_useful"


async def record_verdict(
    services: Services,
    clicker: str,
    action: dict[str, str],
    click_item: int,
) -> tuple[str, bool]:
    """The owner's verdict recorded (once per click): the one line the clicker reads, and
    whether it was the owner's verdict on a finding there is."""
    owner = services.settings.owner
    if not owner or clicker != owner:
        return "Only the owner's verdict on a finding counts; nothing was recorded.", False
    finding_id = parse_id(action["finding"], what="a finding number")
    verdict = action["verdict"]
    async with services.db.write() as tx:
        finding = await tx.get(Finding, finding_id) if finding_id is not None else None
        if finding is None:
            return f"No finding #{action['finding']}.", False
        await record_feedback(tx, finding.id, BUTTON, f"click:{click_item}", verdict, utcnow())
    if verdict == NOT_USEFUL:
        return f"Noted: finding #{finding.id} was not useful.", True
    return f"Noted: finding #{finding.id} is worth tracking.", True

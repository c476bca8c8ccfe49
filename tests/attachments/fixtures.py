"""The fixtures of the attachment pipeline's tests, imported by each module that uses them
(the directory's conftest.py is part A's, for the extraction tests)."""

from collections.abc import Iterator

import pytest

from bot.attachments.work import AttachmentWorker
from tests.feishu_world import fake, make_world  # noqa: F401  (fixtures)
from tests.sources.conftest import dovecot_server, mail_account  # noqa: F401  (fixtures)


@pytest.fixture(autouse=True)
def quick_retries() -> Iterator[None]:
    """A transient failure is tried again within moments, not minutes."""
    before = AttachmentWorker.retry_first, AttachmentWorker.retry_most
    AttachmentWorker.retry_first, AttachmentWorker.retry_most = 0.01, 0.05
    yield
    AttachmentWorker.retry_first, AttachmentWorker.retry_most = before

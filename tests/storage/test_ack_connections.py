"""On PostgreSQL a webhook's ingest writes on connections of its own: the Bot's turns and
senders holding the whole main pool never make an ack wait for one."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import TimeoutError as PoolTimeout

from storage.db import create_database

pytestmark = pytest.mark.postgres


async def test_an_ack_write_goes_through_while_the_main_pool_is_all_held(
    postgres_run_database: str,
) -> None:
    db = create_database(postgres_run_database, pool_size=1, pool_timeout=0.2)
    try:
        async with db.read() as turn, db.read() as sender:  # the main pool's 1 + 1 overflow
            await turn.execute(text("SELECT 1"))
            await sender.execute(text("SELECT 1"))
            with pytest.raises(PoolTimeout):
                async with db.write() as tx:
                    await tx.execute(text("SELECT 1"))
            async with db.ack_write() as tx:
                assert (await tx.execute(text("SELECT 2"))).scalar_one() == 2
    finally:
        await db.dispose()

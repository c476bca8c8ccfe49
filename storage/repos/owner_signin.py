"""The owner's sign-in: pending OAuth states (hashed, single use) and the one sealed token
row, written only through conditional updates on its `version` (a refresh that lost a race
stores nothing)."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import OwnerSignInState, OwnerToken

OWNER = "owner"  # the one row's name (and the sealed value's authenticated context)
OK, RED = "ok", "red"
SIGNIN_TOPIC = "owner_signin"  # a sign-in was stored: the refresh worker plans anew
KEEP_USED_STATES = timedelta(days=1)  # a used or expired state is forgotten after this


async def add_state(
    tx: AsyncSession, state_hash: str, open_id: str, *, now: datetime, expires_at: datetime
) -> None:
    await tx.execute(
        delete(OwnerSignInState).where(OwnerSignInState.expires_at < now - KEEP_USED_STATES)
    )
    tx.add(
        OwnerSignInState(
            state_hash=state_hash, open_id=open_id, created_at=now, expires_at=expires_at
        )
    )
    await tx.flush()


async def take_state(tx: AsyncSession, state_hash: str, now: datetime) -> str | None:
    """Use the state once: the open_id it was issued to, or None (unknown, used, expired)."""
    taken = await tx.execute(
        update(OwnerSignInState)
        .where(
            OwnerSignInState.state_hash == state_hash,
            OwnerSignInState.used_at.is_(None),
            OwnerSignInState.expires_at > now,
        )
        .values(used_at=now)
        .returning(OwnerSignInState.open_id)
    )
    return taken.scalar_one_or_none()


async def token(tx: AsyncSession) -> OwnerToken | None:
    return await tx.scalar(select(OwnerToken).where(OwnerToken.name == OWNER))


async def put(
    tx: AsyncSession,
    sealed: bytes,
    *,
    access_expires_at: datetime,
    refresh_expires_at: datetime | None,
    now: datetime,
) -> None:
    """A fresh sign-in replaces whatever was there (a red one included)."""
    values = {
        "sealed": sealed,
        "access_expires_at": access_expires_at,
        "refresh_expires_at": refresh_expires_at,
        "state": OK,
        "last_error": None,
        "failures": 0,
        "retry_at": None,
        "signed_in_at": now,
        "updated_at": now,
    }
    changed = await tx.execute(
        update(OwnerToken)
        .where(OwnerToken.name == OWNER)
        .values(version=OwnerToken.version + 1, **values)
        .returning(OwnerToken.name)
    )
    if changed.scalar_one_or_none() is None:
        tx.add(OwnerToken(name=OWNER, version=1, **values))
        await tx.flush()


async def refreshed(
    tx: AsyncSession,
    version: int,
    sealed: bytes,
    *,
    access_expires_at: datetime,
    refresh_expires_at: datetime | None,
    now: datetime,
) -> bool:
    """Store a refresh's rotated tokens over the version it read; False: another writer came
    first (a sign-in, a sign-out, another refresh) and this one is dropped."""
    changed = await tx.execute(
        update(OwnerToken)
        .where(OwnerToken.name == OWNER, OwnerToken.version == version)
        .values(
            sealed=sealed,
            access_expires_at=access_expires_at,
            refresh_expires_at=refresh_expires_at,
            version=version + 1,
            state=OK,
            last_error=None,
            failures=0,
            retry_at=None,
            updated_at=now,
        )
        .returning(OwnerToken.name)
    )
    return changed.scalar_one_or_none() is not None


async def mark_red(tx: AsyncSession, version: int, error: str, now: datetime) -> bool:
    """Sign in again: nothing more is tried until the owner does."""
    changed = await tx.execute(
        update(OwnerToken)
        .where(OwnerToken.name == OWNER, OwnerToken.version == version)
        .values(state=RED, last_error=error, retry_at=None, version=version + 1, updated_at=now)
        .returning(OwnerToken.name)
    )
    return changed.scalar_one_or_none() is not None


async def record_failure(
    tx: AsyncSession, version: int, error: str, *, retry_at: datetime, now: datetime
) -> bool:
    """A transient refresh failure: tried again at `retry_at` (the version stays: the token
    read is still the one to refresh)."""
    changed = await tx.execute(
        update(OwnerToken)
        .where(OwnerToken.name == OWNER, OwnerToken.version == version)
        .values(
            last_error=error,
            failures=OwnerToken.failures + 1,
            retry_at=retry_at,
            updated_at=now,
        )
        .returning(OwnerToken.name)
    )
    return changed.scalar_one_or_none() is not None


async def remove(tx: AsyncSession) -> bool:
    gone = await tx.execute(
        delete(OwnerToken).where(OwnerToken.name == OWNER).returning(OwnerToken.name)
    )
    return gone.scalar_one_or_none() is not None

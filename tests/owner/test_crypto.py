"""Sealed tokens open only with the key that sealed them, in the row they were sealed for."""

from __future__ import annotations

import pytest

from bot.owner.crypto import Sealer, Unreadable


def test_a_sealed_value_opens_with_its_key_and_hides_its_text() -> None:
    sealed = Sealer("key one").seal({"access_token": "u-secret"}, context="owner")
    assert b"u-secret" not in sealed
    assert Sealer("key one").open(sealed, context="owner") == {"access_token": "u-secret"}


def test_another_key_a_moved_value_or_a_flipped_bit_is_unreadable() -> None:
    sealed = Sealer("key one").seal({"access_token": "u-secret"}, context="owner")
    flipped = sealed[:-1] + bytes([sealed[-1] ^ 1])
    for key, value, context in (
        ("key two", sealed, "owner"),
        ("key one", sealed, "someone"),
        ("key one", flipped, "owner"),
        ("key one", b"short", "owner"),
    ):
        with pytest.raises(Unreadable):
            Sealer(key).open(value, context=context)

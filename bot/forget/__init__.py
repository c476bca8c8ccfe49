"""Forgetting what the owner asks: `/forget` and `maka forget` (storage/repos/forgets.py)."""

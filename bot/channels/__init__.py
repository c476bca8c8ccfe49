"""Channels: where messages come in and replies go out (Feishu, the console page)."""

"""The Feishu (Lark) channel: webhook and long connection in, outbox sender out."""

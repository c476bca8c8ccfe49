"""Feishu as a source of originals: chat history synced into `source_records` (`history`), the
one record a message becomes, for sync and webhook ingest alike (`records`), the kept-alive
transport the history's typed requests run on (`transport`), and the one place that imports
the lark-oapi SDK, for the channel too (`sdk`)."""

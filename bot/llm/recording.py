"""Model calls recorded in the database (`model_calls`), for /status and cost tracking."""

from __future__ import annotations

from bot.llm.client import ModelCallRecord
from storage.db import Database, Together
from storage.models import ModelCall
from storage.repos import model_calls


class DatabaseRecorder:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def record(self, call: ModelCallRecord) -> None:
        row = ModelCall(
            purpose=call.purpose,
            model=call.model,
            input_tokens=call.input_tokens,
            output_tokens=call.output_tokens,
            latency_ms=call.latency_ms,
            error=call.error,
            created_at=call.created_at,
            usage_estimated=call.usage_estimated,
            fallback=call.fallback,
            conversation_id=call.conversation_id,
        )
        await self.db.grouped(Together(model_calls.insert_all, row))  # with others' records

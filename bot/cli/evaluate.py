"""`maka eval recall --dataset FILE [--router reference|model] [--json]`."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from bot.config import RecallMode, Settings, reveal
from bot.llm.client import NullRecorder
from bot.llm.factory import build_model_client
from bot.workhub.evaluation import evaluate, load_dataset, table
from bot.workhub.recall import Recall
from storage.search.tokenizer import configure_tokenizer


async def run_recall_eval(settings: Settings, dataset: Path, router: str, as_json: bool) -> int:
    try:
        data = load_dataset(dataset)
    except (OSError, ValueError, ValidationError) as exc:
        print(f"cannot read {dataset}: {str(exc).splitlines()[0]}")
        return 2
    configure_tokenizer(settings.data_dir / "cache")
    recall = Recall(RecallMode.REFERENCE, None, settings.tz)
    if router == "model":
        client = build_model_client(
            settings.model_base_url,
            reveal(settings.model_api_key),
            settings.model_name,
            NullRecorder(),
            timeout=settings.model_timeout,
            api_version=settings.model_api_version,
        )
        if client is None:
            print("--router model needs MAKA_MODEL_BASE_URL, MAKA_MODEL_API_KEY, MAKA_MODEL_NAME")
            return 2
        recall = Recall(RecallMode.MODEL, client, settings.tz)
    report = await evaluate(data, strategy=settings.workhub_evidence, recall=recall)
    print(json.dumps(report, ensure_ascii=False, indent=2) if as_json else table(report))
    return 0

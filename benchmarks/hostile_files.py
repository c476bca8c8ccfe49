"""Hostile-files benchmark, run by hand: `.venv/bin/python benchmarks/hostile_files.py`
(`make bench` runs it). Extracts the ten hostile files of tests/attachments/hostile.py (zip
bomb, pixel bomb, page-tree loop, mislabelled bytes, encrypted and truncated PDFs, an empty
file, NULs, nesting, a spreadsheet declaring 17 billion cells) one after the other with the
production `extract()` (bot/attachments/extract: one sandboxed child process each, default
limits), and prints each one's line and time; then the parent's peak RSS and its RSS after,
beside its RSS before the first file (the fixtures are made before that, so they are not in
the figures). The baseline for time is a benign one-page PDF read the same way.

What it shows: every hostile file costs the parent nothing (the expansion, loop or padding
happens, if at all, in a child that is limited and killed), and each ends in one line. It only
reports; it exits 1 when a hostile file raises or is answered with more than one line.
`--quick` is accepted and changes nothing (the run takes seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for tests.attachments

from _summary import emit  # noqa: E402

from bot.attachments.extract import ExtractLimits, extract  # noqa: E402
from tests.attachments import files  # noqa: E402
from tests.attachments.hostile import HOSTILE  # noqa: E402

NAME = "hostile_files"


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


async def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="accepted; the run is short anyway")
    parser.parse_args()
    made = [(hostile, hostile.make()) for hostile in HOSTILE]
    benign = files.pdf("an ordinary page")
    limits = ExtractLimits()
    await extract(benign, name="warm-up.pdf", limits=limits)  # imports, first child
    before = rss_mb()
    started = time.perf_counter()
    await extract(benign, name="benign.pdf", limits=limits)
    benign_seconds = time.perf_counter() - started
    print(f"{'benign one-page PDF':32} {benign_seconds:6.2f} s  read")
    failed = False
    slowest = 0.0
    for hostile, data in made:
        started = time.perf_counter()
        try:
            extraction = await extract(data, name=hostile.name, limits=limits)
        except Exception as error:  # a hostile file must never raise
            print(f"{hostile.label:32} RAISED {type(error).__name__}: {error}")
            failed = True
            continue
        seconds = time.perf_counter() - started
        slowest = max(slowest, seconds)
        line = extraction.error or f"read: {extraction.detail} ({len(extraction.text)} chars)"
        failed |= "\n" in line
        print(f"{hostile.label:32} {seconds:6.2f} s  {line}")
    peak, after = peak_rss_mb(), rss_mb()
    print(f"parent RSS: before {before:.1f} MB, peak {peak:.1f} MB, after {after:.1f} MB")
    emit(NAME, "slowest hostile file", slowest, benign_seconds, unit="s", better="lower",
         baseline_what="a benign one-page PDF")  # fmt: skip
    emit(NAME, "parent peak RSS", peak, before, unit="MB", better="lower",
         baseline_what="parent RSS before the files")  # fmt: skip
    emit(NAME, "parent RSS after", after, before, unit="MB", better="lower",
         baseline_what="parent RSS before the files")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

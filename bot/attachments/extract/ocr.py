"""Images read by OCR with the `tesseract` CLI (Chinese and English). Whether OCR is there is
asked once per process; the reading itself runs in the sandbox child, whose resource limits
tesseract inherits."""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from bot.attachments.extract.result import OutOfTime, Unreadable

LANGUAGES = ("chi_sim", "eng")
MAX_PIXELS = 40_000_000
OCR_OFF = "OCR is off (install tesseract-ocr and tesseract-ocr-chi-sim)"
OCR_TURNED_OFF = "OCR is turned off"
STARTUP_LINE = "OCR is off: install tesseract-ocr and tesseract-ocr-chi-sim to read images"

_CJK = (
    "\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u31ff"  # radicals, punctuation, kana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"  # ideographs, full-width forms
)
# tesseract puts a space between CJK characters; Chinese has none, and a search for 报销
# must find 报 销 as a word.
_CJK_GAP = re.compile(f"(?<=[{_CJK}])[ \t]+(?=[{_CJK}])")


@functools.cache
def ocr_languages() -> tuple[str, ...]:
    """The languages of LANGUAGES that the installed tesseract has (none without tesseract)."""
    binary = shutil.which("tesseract")
    if binary is None:
        return ()
    try:
        listed = subprocess.run(
            [binary, "--list-langs"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return ()
    installed = set((listed.stdout + listed.stderr).split())
    return tuple(language for language in LANGUAGES if language in installed)


def ocr_available() -> bool:
    """tesseract with chi_sim and eng installed."""
    return ocr_languages() == LANGUAGES


def join_cjk(text: str) -> str:
    return _CJK_GAP.sub("", text)


def read_image(
    path: Path, languages: tuple[str, ...], off: str, deadline: float
) -> tuple[str, str]:
    """(text, detail). Runs in the sandbox child; without `languages` OCR is off and `off`
    says why; `deadline` is on time.monotonic()."""
    from PIL import Image

    # Pillow's own bomb check would refuse at open, before the size could be told; ours
    # below reads the size from the header and refuses before anything is decoded.
    Image.MAX_IMAGE_PIXELS = None
    try:
        with Image.open(path) as image:
            width, height = image.size  # from the header: nothing decoded yet
            if width * height > MAX_PIXELS:
                raise Unreadable(f"image too large ({width}x{height})")
            if not languages:
                raise Unreadable(off)
            image.seek(0)  # the first frame of a GIF or a multi-page TIFF
            grey = image.convert("L")
    except (OSError, SyntaxError, ValueError) as error:  # Pillow's "cannot identify", truncation
        raise Unreadable(f"damaged image ({error})") from None
    with tempfile.TemporaryDirectory(prefix="ocr-") as scratch:
        # tesseract reads what leptonica was built for; a grey PNG it always reads.
        png = Path(scratch) / "page.png"
        grey.save(png)
        del grey
        text = _tesseract(png, languages, deadline)
    language = "+".join(languages)
    text = join_cjk(text).strip()
    return text, f"OCR {language}" if text else f"OCR {language}, no text found"


def _tesseract(png: Path, languages: tuple[str, ...], deadline: float) -> str:
    binary = shutil.which("tesseract")
    if binary is None:
        raise Unreadable(OCR_OFF)
    environment = dict(os.environ, OMP_THREAD_LIMIT="1")  # one thread: one core, less memory
    try:
        done = subprocess.run(
            [binary, str(png), "stdout", "-l", "+".join(languages)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=max(deadline - time.monotonic(), 0.1),
            env=environment,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise OutOfTime from None
    if done.returncode != 0:
        complaint = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        if -done.returncode in (signal.SIGXCPU, signal.SIGKILL):  # its CPU limit, ours
            raise OutOfTime
        if done.returncode < 0:
            raise Unreadable(f"OCR stopped (signal {-done.returncode})")
        raise Unreadable(f"OCR failed ({complaint[-1] if complaint else done.returncode})")
    return done.stdout.decode("utf-8", errors="replace")

"""A request aiohttp cannot parse (a header line over 8 KiB, a NUL in the path, a broken
request line) is answered 400 by aiohttp itself, which then logs the parser's traceback at
ERROR: a dozen lines for each such request, so anyone who can reach the port could fill the
log. Here each becomes one WARNING line naming the client and the parser's reason."""

from __future__ import annotations

import logging

from aiohttp.http_exceptions import HttpProcessingError

from bot.host.backoff import one_line

SERVER_LOGGER = "aiohttp.server"
REASON_CHARS = 160


class OneLineBadRequests(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            reason = one_line(exc.message or type(exc).__name__, REASON_CHARS)
            said = record.getMessage()
            record.msg, record.args = "%s; answered %s: %s", (said, exc.code, reason)
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.exc_info = record.exc_text = None
        return True


def log_bad_requests_in_one_line() -> None:
    """Installed once on aiohttp's server logger, however many apps are made."""
    logger = logging.getLogger(SERVER_LOGGER)
    if not any(isinstance(f, OneLineBadRequests) for f in logger.filters):
        logger.addFilter(OneLineBadRequests())

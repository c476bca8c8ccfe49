"""Reading a mail as people read it: text/plain preferred, HTML turned into text, charsets and
RFC 2047 headers decoded (GB2312 read as its GB18030 superset, undeclared 8-bit tried as
UTF-8, then GB18030), the thread from Message-ID / In-Reply-To / References, attachments by
name and size only. Standard library only.

A mail's key is a hash of its Message-ID, or of its main headers when it has none, so the same
mail seen again (a UIDVALIDITY change, a second fetch) is the same record.
"""

from __future__ import annotations

import email
import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.header import decode_header
from email.message import Message
from email.utils import getaddresses, parsedate_to_datetime
from html.parser import HTMLParser
from typing import Any

MAX_TEXT_CHARS = 200_000

# Labels mail software writes that Python reads too narrowly (GB2312 mail is really GBK).
CHARSET_ALIASES = {
    "gb2312": "gb18030",
    "gb_2312-80": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "cp936": "gb18030",
    "ks_c_5601-1987": "cp949",
    "iso-8859-1": "cp1252",  # what Windows mailers really mean by it
    "latin1": "cp1252",
    "us-ascii": "utf-8",  # 8-bit bytes under an ASCII label are usually UTF-8
    "ascii": "utf-8",
    "unknown-8bit": "utf-8",
    "x-unknown": "utf-8",
}
_MSGID = re.compile(r"<[^<>\s]+>")


def decode_bytes(data: bytes, charset: str | None) -> str:
    """Bytes in a declared charset (or none): never raises."""
    if charset:
        name = CHARSET_ALIASES.get(charset.strip().strip('"').lower(), charset.strip().strip('"'))
        try:
            text = data.decode(name)
        except LookupError:
            pass  # a label Python does not know: guess below
        except UnicodeDecodeError:
            if name.lower().replace("_", "-") != "utf-8":
                return data.decode(name, errors="replace")
        else:
            return text
    for guess in ("utf-8", "gb18030"):
        try:
            return data.decode(guess)
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", errors="replace")


def _unescape_8bit(value: str) -> str:
    """Raw 8-bit header bytes come out of the parser as surrogate escapes: decode them."""
    if any("\udc80" <= ch <= "\udcff" for ch in value):
        return decode_bytes(value.encode("ascii", "surrogateescape"), None)
    return value


def decode_header_value(value: Any) -> str:
    """An RFC 2047 (or raw 8-bit) header value as text, on one line."""
    if value is None:
        return ""
    raw = _unescape_8bit(str(value))
    raw = re.sub(r"\r?\n[ \t]+", " ", raw)
    try:
        parts = decode_header(raw)
    except Exception:  # a malformed encoded word: show it as it is
        return raw.strip()
    out = []
    for chunk, charset in parts:
        if isinstance(chunk, bytes):
            if charset is None:
                try:
                    out.append(chunk.decode("utf-8"))
                except UnicodeDecodeError:
                    out.append(chunk.decode("raw-unicode-escape", errors="replace"))
            else:
                out.append(decode_bytes(chunk, charset))
        else:
            out.append(chunk)
    return re.sub(r"\s+", " ", "".join(out)).strip()


def decode_addresses(value: Any) -> list[str]:
    """`Name <addr>` for each address of a From/To/Cc header (names decoded)."""
    if value is None:
        return []
    raw = re.sub(r"\r?\n[ \t]+", " ", _unescape_8bit(str(value)))
    out = []
    for name, addr in getaddresses([raw]):
        name = decode_header_value(name) if name else ""
        if not addr and not name:
            continue
        out.append(f"{name} <{addr}>" if name and addr else (addr or name))
    return out


def message_ids(value: Any) -> list[str]:
    if value is None:
        return []
    return _MSGID.findall(re.sub(r"\s+", " ", _unescape_8bit(str(value))))


def key_hash(kind: str, value: str) -> str:
    return hashlib.sha256(f"{kind}\0{value}".encode("utf-8", "surrogatepass")).hexdigest()


class _TextExtractor(HTMLParser):
    BLOCK = frozenset(
        {
            "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt",
            "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4",
            "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section",
            "table", "tr", "ul",
        }
    )  # fmt: skip
    SKIP = frozenset({"script", "style", "head", "title", "template", "noscript"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0
        self._pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            self._skip += 1
        elif tag == "pre":
            self._pre += 1
        if tag in self.BLOCK:
            self.parts.append("\n")
        if tag == "li":
            self.parts.append("- ")
        elif tag in ("td", "th"):
            self.parts.append(" ")
        elif tag == "img":
            alt = dict(attrs).get("alt")
            if alt and not self._skip:
                self.parts.append(f"[{alt}]")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag == "pre":
            self._pre = max(0, self._pre - 1)
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        self.parts.append(data if self._pre else re.sub(r"\s+", " ", data))


def html_to_text(html: str) -> str:
    parser = _TextExtractor()
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # html.parser is lenient; whatever it read so far is the text
        pass
    return tidy("".join(parser.parts))


def tidy(text: str) -> str:
    lines = [line.strip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


INLINE_IMAGE_SKIP_BYTES = 8 * 1024  # an inline image smaller than this is a logo or a spacer


@dataclass(frozen=True)
class Attachment:
    name: str
    size: int | None  # None when the mail was cut short before its end
    content_type: str
    # The part's bytes, when the caller asked for them (`keep_bytes_up_to`) and the part is
    # whole, within the limit, and not a small inline image: what is read into text.
    data: bytes | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class ParsedMail:
    key: str  # hash of the Message-ID, or of the main headers
    message_id: str | None
    subject: str
    sender: str | None
    to: list[str]
    cc: list[str]
    date: datetime | None
    in_reply_to: str | None
    references: list[str]
    thread_key: str  # the key the thread's first mail has (hash of its Message-ID)
    text: str
    html_only: bool
    attachments: list[Attachment] = field(default_factory=list)
    text_truncated: bool = False
    reply_to: str | None = None  # where a reply goes, when not to the sender


def _raw(msg: Message, name: str) -> str | None:
    """A header's value as it was on the wire (8-bit bytes as surrogate escapes): the legacy
    API would wrap 8-bit values in a Header that loses them."""
    wanted = name.lower()
    for key, value in msg.raw_items():
        if key.lower() == wanted:
            return str(value)
    return None


def _part_text(part: Message) -> str:
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        payload = str(part.get_payload() or "").encode("utf-8", "surrogateescape")
    return decode_bytes(payload, part.get_content_charset())


def _filename(part: Message) -> str | None:
    try:
        name = part.get_filename()
    except Exception:
        name = None
    if name is None:
        name = part.get_param("name")  # type: ignore[assignment]
        if isinstance(name, tuple):
            name = email.utils.collapse_rfc2231_value(name)
    return decode_header_value(name) if name else None


def _leaves(part: Message, top: bool = True) -> list[Message]:
    """The parts a reader sees; a forwarded mail (message/rfc822) is one part, not opened."""
    if part.get_content_type() == "message/rfc822" and not top:
        return [part]
    payload = part.get_payload()
    if part.is_multipart() and isinstance(payload, list):
        out: list[Message] = []
        for sub in payload:
            if isinstance(sub, Message):
                out.extend(_leaves(sub, top=False))
        return out
    return [part]


def _size(part: Message) -> int | None:
    if part.get_content_type() == "message/rfc822":
        inner = part.get_payload()
        try:
            return sum(len(m.as_bytes()) for m in inner if isinstance(m, Message))
        except Exception:
            return None
    payload = part.get_payload(decode=True)
    return len(payload) if isinstance(payload, bytes) else None


def _kept(part: Message, size: int | None, disposition: str, limit: int | None) -> bytes | None:
    if limit is None or size is None or size > limit or part.is_multipart():
        return None
    inline = disposition != "attachment"
    if inline and part.get_content_maintype() == "image" and size < INLINE_IMAGE_SKIP_BYTES:
        return None
    payload = part.get_payload(decode=True)
    return payload if isinstance(payload, bytes) and payload else None


def parse_mail(
    raw: bytes, *, truncated: bool = False, keep_bytes_up_to: int | None = None
) -> ParsedMail:
    """`truncated`: only the start of the mail was fetched (a very large one); the last part
    may be cut, so its size is unknown. `keep_bytes_up_to`: keep the bytes of each attachment
    of at most this size (to be read into text), except small inline images."""
    msg = email.message_from_bytes(raw)
    plain: list[str] = []
    html: list[str] = []
    attachments: list[Attachment] = []
    leaves = _leaves(msg)
    for part in leaves:
        ctype = part.get_content_type()
        disposition = str(part.get("Content-Disposition") or "").split(";")[0].strip().lower()
        if disposition != "attachment" and ctype == "text/plain":
            plain.append(_part_text(part))
        elif disposition != "attachment" and ctype == "text/html":
            html.append(_part_text(part))
        else:
            name = _filename(part)
            if name is None and ctype == "message/rfc822":
                inner = part.get_payload()
                if isinstance(inner, list) and inner and isinstance(inner[0], Message):
                    subject = decode_header_value(_raw(inner[0], "Subject"))
                    name = (subject or "message") + ".eml"
            size = None if truncated and part is leaves[-1] else _size(part)
            data = _kept(part, size, disposition, keep_bytes_up_to)
            attachments.append(
                Attachment(name or f"unnamed.{part.get_content_subtype()}", size, ctype, data)
            )
    if plain:
        text, html_only = tidy("\n\n".join(t for t in plain if t.strip())), False
    else:
        text, html_only = html_to_text("\n".join(html)), bool(html)
    cut = len(text) > MAX_TEXT_CHARS
    text = text[:MAX_TEXT_CHARS]

    message_id = next(iter(message_ids(_raw(msg, "Message-ID"))), None)
    in_reply_to = next(iter(message_ids(_raw(msg, "In-Reply-To"))), None)
    references = message_ids(_raw(msg, "References"))
    subject = decode_header_value(_raw(msg, "Subject"))
    senders = decode_addresses(_raw(msg, "From"))
    if message_id:
        key = key_hash("message-id", message_id)
    else:
        main = "\n".join(
            _unescape_8bit(_raw(msg, h) or "").strip()
            for h in ("Date", "From", "To", "Cc", "Subject")
        )
        key = key_hash("headers", main)
    root = references[0] if references else in_reply_to
    return ParsedMail(
        key=key,
        message_id=message_id,
        subject=subject,
        sender=senders[0] if senders else None,
        to=decode_addresses(_raw(msg, "To")),
        cc=decode_addresses(_raw(msg, "Cc")),
        date=_date(_raw(msg, "Date")),
        in_reply_to=in_reply_to,
        references=references,
        thread_key=key_hash("message-id", root) if root else key,
        text=text,
        html_only=html_only,
        attachments=attachments,
        text_truncated=cut,
        reply_to=next(iter(decode_addresses(_raw(msg, "Reply-To"))), None),
    )


def _date(value: Any) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = parsedate_to_datetime(_unescape_8bit(str(value)).strip())
    except (TypeError, ValueError, IndexError):
        return None
    if parsed is None:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)

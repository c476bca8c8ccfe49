"""A real IMAP server for the email tests: Debian's Dovecot with a private configuration in a
temporary directory, on a free 127.0.0.1 port: passwd-file users (one per test), maildir,
plaintext login allowed (loopback only), mail owned by an unprivileged uid (Dovecot refuses
uid 0: as root we use `nobody`/`nogroup`, otherwise the current user).

Mail is delivered with IMAP APPEND from a separate admin connection, so Dovecot assigns UIDs
as it would for delivered mail; `recreate` deletes and creates a mailbox, which gives it a new
UIDVALIDITY.
"""

from __future__ import annotations

import contextlib
import grp
import imaplib
import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path

from sources.email import quote_mailbox

START_TIMEOUT = 20.0
USER_POOL = 64

CONFIG = """\
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
default_internal_user = {user}
default_internal_group = {group}
default_login_user = {user}
first_valid_uid = 1
mail_location = maildir:{root}/mail/%u
namespace inbox {{
  inbox = yes
  mailbox "Sent Items" {{
    special_use = \\Sent
  }}
}}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {root}/passwd
}}
userdb {{
  driver = passwd-file
  args = username_format=%u {root}/passwd
  default_fields = uid={user} gid={group} home={root}/mail/%u
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service anvil {{
  chroot =
}}
"""


class DovecotUnavailable(Exception):
    pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _mail_identity() -> tuple[str, str, int, int]:
    if os.geteuid() == 0:
        user = pwd.getpwnam("nobody")
        group = grp.getgrnam("nogroup") if _has_group("nogroup") else grp.getgrgid(user.pw_gid)
        return user.pw_name, group.gr_name, user.pw_uid, group.gr_gid
    user = pwd.getpwuid(os.geteuid())
    group = grp.getgrgid(os.getegid())
    return user.pw_name, group.gr_name, user.pw_uid, group.gr_gid


def _has_group(name: str) -> bool:
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


@dataclass
class Dovecot:
    root: Path
    port: int
    process: subprocess.Popen[bytes]
    host: str = "127.0.0.1"
    users: dict[str, str] = field(default_factory=dict)
    handed_out: int = 0

    @property
    def passwd(self) -> Path:
        return self.root / "passwd"

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join((self.root / "dovecot.log").read_text().splitlines()[-lines:])
        except OSError:
            return ""

    def create_users(self, count: int) -> None:
        for _ in range(count):
            self.users[f"u{secrets.token_hex(4)}"] = secrets.token_urlsafe(12)
        lines = "".join(f"{u}:{{PLAIN}}{p}::::::\n" for u, p in self.users.items())
        tmp = self.passwd.with_suffix(".new")
        tmp.write_text(lines)
        tmp.chmod(0o644)
        tmp.replace(self.passwd)

    def add_user(self) -> MailAccount:
        """A fresh account (its own mailboxes). Users are made in advance: Dovecot looks at
        the passwd file at most once a second, so a user added just now might not log in."""
        if self.handed_out >= len(self.users):
            self.create_users(USER_POOL)
            time.sleep(1.1)
        user = list(self.users)[self.handed_out]
        self.handed_out += 1
        return MailAccount(self, user, self.users[user])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class MailAccount:
    server: Dovecot
    user: str
    password: str

    @contextlib.contextmanager
    def imap(self) -> Iterator[imaplib.IMAP4]:
        conn = imaplib.IMAP4(self.server.host, self.server.port, timeout=10)
        try:
            conn.login(self.user, self.password)
            yield conn
        finally:
            with contextlib.suppress(Exception):
                conn.logout()

    def append(self, mailbox: str, raw: bytes, *, seen: bool = False) -> int:
        """Deliver one mail; its UID."""
        with self.imap() as conn:
            typ, data = conn.append(quote_mailbox(mailbox), "(\\Seen)" if seen else None, None, raw)
            assert typ == "OK", data
            match = re.search(rb"APPENDUID \d+ (\d+)", data[0] or b"")
            assert match, data
            return int(match.group(1))

    def create(self, mailbox: str) -> None:
        with self.imap() as conn:
            typ, data = conn.create(quote_mailbox(mailbox))
            assert typ == "OK", data

    def recreate(self, mailbox: str) -> None:
        """Delete and create again: Dovecot gives the new mailbox a new UIDVALIDITY."""
        with self.imap() as conn:
            typ, data = conn.delete(quote_mailbox(mailbox))
            assert typ == "OK", data
            typ, data = conn.create(quote_mailbox(mailbox))
            assert typ == "OK", data

    def uidvalidity(self, mailbox: str) -> int:
        with self.imap() as conn:
            typ, data = conn.status(quote_mailbox(mailbox), "(UIDVALIDITY)")
            assert typ == "OK", data
            match = re.search(rb"UIDVALIDITY (\d+)", data[0] or b"")
            assert match
            return int(match.group(1))

    def flags(self, mailbox: str) -> dict[int, set[str]]:
        """UID -> flags, read with EXAMINE (so reading them changes nothing)."""
        with self.imap() as conn:
            typ, _ = conn.select(quote_mailbox(mailbox), readonly=True)
            assert typ == "OK"
            typ, data = conn.uid("FETCH", "1:*", "(UID FLAGS)")
            out: dict[int, set[str]] = {}
            for line in data:
                m = (
                    re.search(rb"UID (\d+) FLAGS \(([^)]*)\)", line)
                    if isinstance(line, bytes)
                    else None
                )
                if m:
                    out[int(m.group(1))] = set(m.group(2).decode().split())
            return out


def start_dovecot() -> Dovecot:
    binary = shutil.which("dovecot", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    if binary is None:
        raise DovecotUnavailable(
            "dovecot is not installed (Debian: apt-get install dovecot-imapd; "
            "`make test` does it through scripts/ensure-dovecot)"
        )
    user, group, uid, gid = _mail_identity()
    root = Path(tempfile.mkdtemp(prefix="maka-dovecot-"))
    root.chmod(0o755)  # the mail uid must reach its maildirs
    for sub in ("run", "state", "mail"):
        (root / sub).mkdir()
    os.chown(root / "mail", uid, gid)
    port = _free_port()
    conf = root / "dovecot.conf"
    conf.write_text(CONFIG.format(root=root, port=port, user=user, group=group))
    output = open(root / "stdout.log", "wb")
    process = subprocess.Popen(
        [binary, "-F", "-c", str(conf)], stdout=output, stderr=subprocess.STDOUT
    )
    server = Dovecot(root, port, process)
    server.create_users(USER_POOL)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            detail = (root / "stdout.log").read_text(errors="replace").strip().splitlines()
            shutil.rmtree(root, ignore_errors=True)
            raise DovecotUnavailable(f"dovecot exited at start: {' | '.join(detail[-3:])}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                if s.recv(200).startswith(b"* OK"):
                    return server
        except OSError:
            time.sleep(0.1)
    server.stop()
    shutil.rmtree(root, ignore_errors=True)
    raise DovecotUnavailable(f"dovecot did not answer on 127.0.0.1:{port}")


# ---- mails ---------------------------------------------------------------------------------


def mail(
    *,
    subject: str = "hello",
    body: str = "hello there",
    sender: str = "Alice <alice@example.com>",
    to: str = "Maka <maka@example.com>",
    message_id: str | None = "auto",
    in_reply_to: str | None = None,
    date: datetime | None = None,
    extra_headers: str = "",
) -> bytes:
    if message_id == "auto":
        message_id = f"<{secrets.token_hex(8)}@example.com>"
    headers = [
        f"From: {sender}",
        f"To: {to}",
        f"Subject: {subject}",
        f"Date: {format_datetime(date or datetime.now(UTC))}",
    ]
    if message_id:
        headers.append(f"Message-ID: {message_id}")
    if in_reply_to:
        headers += [f"In-Reply-To: {in_reply_to}", f"References: {in_reply_to}"]
    headers += ["MIME-Version: 1.0", "Content-Type: text/plain; charset=utf-8"]
    headers += ["Content-Transfer-Encoding: 8bit"]
    text = "\r\n".join(headers) + "\r\n" + extra_headers + "\r\n" + body.replace("\n", "\r\n")
    return text.encode("utf-8")

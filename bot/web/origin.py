"""Where a request comes from and which address it was sent to, as the browser saw it.

Directly: the TCP peer, and the scheme and Host of this server. Behind a TLS-terminating
reverse proxy the browser's view arrives in headers: `X-Forwarded-For` (the client),
`X-Forwarded-Proto` (https) and `X-Forwarded-Host`. Anyone can send those headers, so they are
believed only from a peer in MAKA_TRUSTED_PROXIES; from anyone else they are ignored (a
client that names another address would otherwise dodge its login limit). MAKA_PUBLIC_URL
names the address people open, for a proxy that sends no X-Forwarded-Proto/-Host.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from aiohttp import web

from bot.config import Settings, is_loopback


@dataclass(frozen=True)
class Seen:
    client: str  # the client's IP address (or the peer's text when it is not an IP)
    origin: str  # scheme://host[:port] the browser sent the request to
    via_trusted_proxy: bool


class Origins:
    def __init__(self, settings: Settings) -> None:
        self.public_origin = settings.public_url  # already an origin (bot/config.py)
        self.trusted = tuple(settings.trusted_proxies)

    @property
    def public_is_https(self) -> bool:
        return self.public_origin is not None and self.public_origin.startswith("https://")

    def seen(self, request: web.Request) -> Seen:
        peer = request.remote or ""
        scheme, host = request.scheme, request.host
        if not self._trusted(peer):
            return Seen(peer, f"{scheme}://{host}", via_trusted_proxy=False)
        client = self._client_behind(peer, request.headers.getall("X-Forwarded-For", []))
        proto = (_last(request.headers.get("X-Forwarded-Proto")) or "").lower()
        scheme = proto if proto in ("http", "https") else scheme
        host = _last(request.headers.get("X-Forwarded-Host")) or host
        return Seen(client, f"{scheme}://{host}", via_trusted_proxy=True)

    def allowed_origins(self, seen: Seen) -> set[str]:
        return {seen.origin} | ({self.public_origin} if self.public_origin else set())

    def is_secure(self, request: web.Request) -> bool:
        """Whether the login cookie is marked Secure: the browser reached us over https."""
        return self.public_is_https or self.seen(request).origin.startswith("https://")

    def is_public_host(self, host: str) -> bool:
        return self.public_origin is not None and self.public_origin.split("://", 1)[1] == host

    def _client_behind(self, peer: str, forwarded: list[str]) -> str:
        """The nearest address in X-Forwarded-For that is not a trusted proxy: each proxy
        appends who it heard from, so the entries left of it are the client's to invent."""
        hops = [hop.strip() for header in forwarded for hop in header.split(",") if hop.strip()]
        for hop in reversed(hops):
            if not self._trusted(hop):
                return hop if _ip(hop) is not None else peer  # garbage: the proxy is the client
        return hops[0] if hops else peer

    def _trusted(self, address: str) -> bool:
        ip = _ip(address)
        return ip is not None and any(ip in network for network in self.trusted)


def loopback_host(host: str) -> bool:
    """`127.0.0.1:8080` or `[::1]:8080` names loopback."""
    return is_loopback(_hostname(host))


def _ip(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return None


def _last(header: str | None) -> str | None:
    """A proxy that appends gives `https, http`: the value the nearest proxy set is last."""
    if not header:
        return None
    values = [v.strip() for v in header.split(",") if v.strip()]
    return values[-1] if values else None


def _hostname(host: str) -> str:
    """`127.0.0.1:8080` → `127.0.0.1`, `[::1]:8080` → `::1`."""
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host

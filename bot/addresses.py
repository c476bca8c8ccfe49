"""Addresses from settings: the public URL people open (as the origin a browser sends) and
the IP networks of trusted reverse proxies. Each wrong value is a ValueError in one line,
which bot/config.py turns into one start-up line naming its variable."""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def ip_network(text: Any) -> Any:
    """`10.0.0.5` or `10.0.0.0/8` (host bits may be set: `10.1.2.3/8` is 10.0.0.0/8)."""
    if not isinstance(text, str):
        return text
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise ValueError(
            f"{text!r} is not an IP address or network (write e.g. 10.0.0.0/8,127.0.0.1)"
        ) from None


def public_origin(url: str) -> str:
    """`https://bot.example.com/` → `https://bot.example.com`: the origin a browser sends
    from pages under that address. Only a scheme, a host and a port are allowed."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"expected an http:// or https:// URL such as https://bot.example.com, got {url!r}"
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise ValueError(
            f"only scheme, host and port, the address the pages are served at, got {url!r}"
        )
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"a bad port in {url!r}") from None
    default = {"http": 80, "https": 443}[parts.scheme]
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    return f"{parts.scheme}://{host}" + (f":{port}" if port not in (None, default) else "")

"""Which `Host` names the service answers to (SPEC §9), parsed from COMPACTOR_ALLOWED_HOSTS.

A DNS-rebinding page points a name of its own at 127.0.0.1 and then reads the local
service as if it were its own site; the browser still sends that name in `Host`. So a
request is answered only when its `Host` is a loopback name or address, the address the
connection arrived at (an IP literal cannot be rebound), or a configured name. Pure
standard library: the settings validate with it and the middleware matches with it.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

SETTING = "COMPACTOR_ALLOWED_HOSTS"
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
# A DNS name (labels of letters, digits, '-' and '_'); IP literals are parsed apart.
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")


@dataclass(frozen=True, slots=True)
class HostPattern:
    """One allowed name: exact, or `*.suffix` for every name below suffix; any port
    unless one is given."""

    name: str
    port: int | None = None
    wildcard: bool = False

    def matches(self, name: str, port: int | None) -> bool:
        if self.port is not None and port != self.port:
            return False
        if self.wildcard:
            return name.endswith("." + self.name)
        return name == self.name


@dataclass(frozen=True, slots=True)
class AllowedHosts:
    """The configured names; `any_host` when `*` was given (a proxy in front checks)."""

    patterns: tuple[HostPattern, ...] = ()
    any_host: bool = False


def split_host(value: str) -> tuple[str, int | None] | None:
    """`name[:port]` or `[v6][:port]` → (normalized name, port); None when malformed.

    Names are lower-cased without a trailing dot; IP literals in their canonical form."""
    value = value.strip().lower()
    port: int | None = None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                return None
            port = _port(rest[1:])
            if port is None:
                return None
        try:
            return str(ipaddress.IPv6Address(name)), port
        except ValueError:
            return None
    if value.count(":") > 1:
        return None  # an IPv6 literal must be bracketed in a Host header
    name, sep, rest = value.partition(":")
    if sep:
        port = _port(rest)
        if port is None:
            return None
    name = name.removesuffix(".")
    if not name:
        return None
    try:
        return str(ipaddress.IPv4Address(name)), port
    except ValueError:
        pass
    return (name, port) if _NAME.fullmatch(name) else None


def _port(text: str) -> int | None:
    if not text.isdigit() or len(text) > 5 or not 0 < int(text) < 65536:
        return None
    return int(text)


def is_loopback(name: str) -> bool:
    """A loopback name or IP literal: no page of another site can be served under it."""
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def parse_allowed_hosts(value: str | None) -> AllowedHosts:
    """The comma-separated setting; raises ValueError naming the entry it cannot use."""
    patterns: list[HostPattern] = []
    any_host = False
    for entry in (part.strip() for part in (value or "").split(",")):
        if not entry:
            continue
        if entry == "*":
            any_host = True
            continue
        wildcard = entry.startswith("*.")
        parsed = split_host(entry[2:] if wildcard else entry)
        if parsed is None or "*" in entry[2 if wildcard else 0 :]:
            raise ValueError(
                f"{SETTING} entry {entry!r} is not a host name: give names like "
                "compactor.internal, compactor.internal:8000, *.svc.cluster.local, "
                "10.0.0.5 or [fd00::5], or * for any host"
            )
        patterns.append(HostPattern(parsed[0], parsed[1], wildcard))
    return AllowedHosts(tuple(patterns), any_host)


def host_allowed(allowed: AllowedHosts, host: str, bound: tuple[str, int | None] | None) -> bool:
    """Whether a request with this `Host` value is answered; `bound` is the address the
    connection arrived at (the ASGI `server`)."""
    if allowed.any_host:
        return True
    parsed = split_host(host)
    if parsed is None:
        return False
    name, port = parsed
    if is_loopback(name):
        return True
    if bound is not None:
        local = split_host(f"[{bound[0]}]" if ":" in bound[0] else bound[0])
        if local is not None and local[0] == name:
            return True
    return any(pattern.matches(name, port) for pattern in allowed.patterns)

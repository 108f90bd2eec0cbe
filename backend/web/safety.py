"""The SSRF guard for every page the backend fetches on a user's behalf.

Two layers. `check_url` refuses, before any request, what the URL alone gives away: a scheme other than
http(s), credentials in the URL, a denied (or not allowed) domain, an IP literal in a forbidden range.
`guarded_transport` checks every *connection*: its network backend resolves the host itself, refuses
the connection when any address it resolves to is private, loopback, link-local, multicast, reserved
or unspecified (IPv6 too, and the IPv4 inside IPv4-mapped, 6to4, Teredo and NAT64 addresses), and then
connects to the very address it checked. Because the check happens at connect time, a redirect hop and
a DNS answer that changes between check and use (rebinding) are covered as well. TLS still verifies
the certificate against the host name.

Provider endpoints (TAVILY_BASE_URL, SEARXNG_URL) are configuration, not user input, and are not
guarded: a self-hosted SearXNG commonly lives on a private network.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import anyio
import httpcore
import httpx

from backend.errors import UnsafeURL
from backend.web.urls import domain_permitted, host_of

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Awaitable[list[str]]]

_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, 6to4, Teredo server/client, NAT64), if any."""
    if address.ipv4_mapped:
        return address.ipv4_mapped
    if address.sixtofour:
        return address.sixtofour
    if address.teredo:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public(address: IPAddress) -> bool:
    """True for a globally routable unicast address whose embedded IPv4 (if any) is one too."""
    if not address.is_global or address.is_multicast:
        return False
    if isinstance(address, ipaddress.IPv6Address):
        inner = embedded_ipv4(address)
        return inner is None or is_public(inner)
    return True


@dataclass(frozen=True)
class AddressGuard:
    """Which addresses may be connected to. `exempt` opens single networks (tests), `allow_private` all."""

    allow_private: bool = False
    exempt: tuple[IPNetwork, ...] = ()

    def permits(self, address: IPAddress) -> bool:
        if self.allow_private or any(address in net for net in self.exempt):
            return True
        return is_public(address)


@dataclass(frozen=True)
class UrlPolicy:
    """The checks a URL passes before it is fetched: domain lists and the address guard."""

    guard: AddressGuard = AddressGuard()
    allow_domains: tuple[str, ...] = ()
    deny_domains: tuple[str, ...] = ()

    def check(self, url: str) -> httpx.URL:
        """The parsed URL, or UnsafeURL saying why it is refused."""
        try:
            parsed = httpx.URL(url.strip())
        except (httpx.InvalidURL, TypeError) as exc:
            raise UnsafeURL(f"not a valid URL: {_short(url)}") from exc
        if parsed.scheme not in ("http", "https"):
            what = f"{parsed.scheme}: URLs" if parsed.scheme else "relative ones"
            raise UnsafeURL(f"only http(s) URLs are fetched, not {what}")
        if not parsed.host:
            raise UnsafeURL(f"URL without a host: {_short(url)}")
        if parsed.userinfo:
            raise UnsafeURL("URLs with credentials are not fetched")
        if not domain_permitted(str(parsed), allow=self.allow_domains, deny=self.deny_domains):
            raise UnsafeURL(f"domain not permitted by WEB_ALLOW_DOMAINS / WEB_DENY_DOMAINS: {host_of(url)}")
        literal = _ip_literal(parsed.host)
        if literal is not None and not self.guard.permits(literal):
            raise UnsafeURL(f"refusing to fetch a private or reserved address: {literal}")
        return parsed


def _ip_literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


async def system_resolver(host: str, port: int) -> list[str]:
    """The addresses the system resolver gives for host (anyio runs getaddrinfo off the event loop)."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolve, check every address, connect to a checked one: no second lookup between check and use."""

    def __init__(self, guard: AddressGuard, resolver: Resolver) -> None:
        self._guard = guard
        self._resolve = resolver
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            with anyio.fail_after(timeout):
                addresses = await self._resolve(host, port)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"resolving {host} timed out") from exc
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        parsed = [ipaddress.ip_address(a.split("%", 1)[0]) for a in addresses]
        refused = [a for a in parsed if not self._guard.permits(a)]
        if refused or not parsed:
            # All or nothing: a host that resolves to any private address is refused outright.
            raise UnsafeURL(
                f"refusing to connect to {host}: it resolves to private or reserved {refused[:1]}"
            )
        last: Exception | None = None
        for address in parsed:
            try:
                return await self._inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise UnsafeURL("unix sockets are never fetched")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def guarded_transport(
    guard: AddressGuard, *, resolver: Resolver = system_resolver, max_connections: int = 10
) -> httpx.AsyncHTTPTransport:
    """An httpx transport whose every connection passes the address guard; no proxies from the env."""
    transport = httpx.AsyncHTTPTransport(trust_env=False)
    # httpx has no parameter for the network backend; its pool is rebuilt with the same TLS context.
    # tests/test_web_safety.py fails if a future httpx stops using this pool, so this cannot rot silently.
    ssl_context = transport._pool._ssl_context
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=ssl_context,
        max_connections=max_connections,
        network_backend=_GuardedBackend(guard, resolver),
    )
    return transport

"""The SSRF guard: private, loopback, link-local, multicast and reserved addresses are never fetched —
whether named as an IP literal, reached through a host name, or through a redirect hop."""

from __future__ import annotations

import asyncio
import ipaddress

import httpx
import pytest

from backend.errors import PageFetchError, UnsafeURL
from backend.web import AddressGuard, PageLimits, PageReader, UrlPolicy, guarded_transport, is_public

LOOPBACK = (ipaddress.ip_network("127.0.0.1/32"),)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.9",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "100.64.0.1",  # carrier-grade NAT
        "0.0.0.0",
        "224.0.0.1",  # multicast
        "240.0.0.1",  # reserved
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "ff02::1",
        "::ffff:127.0.0.1",  # IPv4-mapped
        "::ffff:10.0.0.1",
        "2002:7f00:1::1",  # 6to4 around 127.0.0.1
        "2002:a00:1::1",  # 6to4 around 10.0.0.1
        "64:ff9b::a9fe:a9fe",  # NAT64 around 169.254.169.254
        "2001:0:4136:e378:8000:63bf:f5ff:fffe",  # Teredo, client 10.0.0.1
    ],
)
def test_private_and_special_addresses_are_refused(address):
    assert not is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"])
def test_public_addresses_are_allowed(address):
    assert is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "only http"),
        ("gopher://example.com/", "only http"),
        ("ftp://example.com/x", "only http"),
        ("http://user:pw@example.com/", "credentials"),
        ("http://127.0.0.1:5432/", "private"),
        ("http://[::1]/", "private"),
        ("http://169.254.169.254/latest/meta-data/", "private"),
        ("http://[::ffff:a9fe:a9fe]/", "private"),
        ("https://blocked.example/page", "not permitted"),
        ("https://sub.blocked.example/page", "not permitted"),
        ("/relative/path", "only http"),
    ],
)
def test_url_policy_refuses_before_any_request(url, reason):
    policy = UrlPolicy(deny_domains=("blocked.example",))
    with pytest.raises(UnsafeURL, match=reason):
        policy.check(url)


def test_allow_list_admits_only_its_domains_and_their_subdomains():
    policy = UrlPolicy(allow_domains=("example.org",))
    assert policy.check("https://docs.example.org/a").host == "docs.example.org"
    with pytest.raises(UnsafeURL, match="not permitted"):
        policy.check("https://example.com/a")
    with pytest.raises(UnsafeURL, match="not permitted"):
        policy.check("https://notexample.org/a")


def fake_dns(table):
    async def resolve(host, port):
        if host not in table:
            raise OSError(f"unknown host {host}")
        return table[host]

    return resolve


def read(url, *, guard, resolver=None, max_redirects=3):
    async def go():
        transport = guarded_transport(guard, resolver=resolver) if resolver else guarded_transport(guard)
        async with httpx.AsyncClient(transport=transport, timeout=5) as client:
            reader = PageReader(
                client, policy=UrlPolicy(guard=guard), limits=PageLimits(max_redirects=max_redirects)
            )
            return await reader.read(url)

    return asyncio.run(go())


def test_a_host_name_that_resolves_to_loopback_is_refused_at_connect_time(fake_web):
    url = fake_web.page_url("rosetta-stone").replace("127.0.0.1", "localhost")
    with pytest.raises(UnsafeURL, match="resolves to private"):
        read(url, guard=AddressGuard())
    assert fake_web.count("/pages/") == 0


def test_any_private_answer_refuses_the_host_even_beside_public_ones(fake_web):
    port = fake_web.base_url.rsplit(":", 1)[1]
    dns = fake_dns({"mixed.test": ["93.184.216.34", "10.0.0.7"]})
    with pytest.raises(UnsafeURL, match="resolves to private"):
        read(f"http://mixed.test:{port}/pages/x", guard=AddressGuard(), resolver=dns)


def test_an_exempted_address_is_reachable_and_the_page_is_read(fake_web):
    port = fake_web.base_url.rsplit(":", 1)[1]
    dns = fake_dns({"fake.test": ["127.0.0.1"]})
    page = read(
        f"http://fake.test:{port}/pages/wiki.example.org/rosetta-stone",
        guard=AddressGuard(exempt=LOOPBACK),
        resolver=dns,
    )
    assert "Champollion" in page.text
    assert fake_web.requests[-1].headers["Host"] == f"fake.test:{port}"  # the name, though we dialled the IP


def test_every_redirect_hop_is_checked_again(fake_web):
    port = fake_web.base_url.rsplit(":", 1)[1]
    dns = fake_dns({"fake.test": ["127.0.0.1"], "metadata.test": ["169.254.169.254"]})
    guard = AddressGuard(exempt=LOOPBACK)
    start = f"http://fake.test:{port}/redirect?to="
    with pytest.raises(UnsafeURL, match="private"):
        read(start + "http://169.254.169.254/latest/meta-data/", guard=guard, resolver=dns)
    with pytest.raises(UnsafeURL, match="resolves to private"):
        read(start + "http://metadata.test/latest/", guard=guard, resolver=dns)
    with pytest.raises(UnsafeURL, match="only http"):
        read(start + "file:///etc/passwd", guard=guard, resolver=dns)
    assert fake_web.count("/redirect") == 3


def test_redirects_are_followed_up_to_the_limit(fake_web):
    guard = AddressGuard(allow_private=True)
    page_path = "/pages/wiki.example.org/rosetta-stone"
    page = read(f"{fake_web.base_url}/redirect?to={page_path}", guard=guard)
    assert page.url.endswith(page_path)
    assert "Rosetta" in page.text
    loop = f"{fake_web.base_url}/redirect?to=/redirect%3Fto%3D{page_path}"
    with pytest.raises(PageFetchError, match="redirects"):
        read(loop, guard=guard, max_redirects=1)

"""URL identity: the canonical form two links to one page share, and domain-list matching."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}
# Parameters that say who sent the reader, not which page it is (ad click ids, analytics, share links).
_TRACKING_PREFIXES = ("utm_", "hsa_", "pk_", "mtm_")
_TRACKING_KEYS = frozenset(
    """gclid gclsrc dclid gbraid wbraid fbclid msclkid yclid twclid ttclid igshid li_fat_id mc_cid mc_eid
    _hsenc _hsmi mkt_tok oly_anon_id oly_enc_id vero_id vero_conv _ga _gl ref_src ref_url spm spm_id_from
    scm share_source share_medium share_plat share_session_id share_from share_tag wfr""".split()
)
_ESCAPE = re.compile(r"%[0-9a-fA-F]{2}")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def canonical_url(url: str) -> str:
    """Lower-case scheme and host, no default port, credentials or fragment, tracking parameters
    dropped, the query sorted, no trailing slash except the root. Not http(s): returned stripped."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return text
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    if scheme not in _DEFAULT_PORTS or not host:
        return text
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = _normalise_escapes(parts.path or "/")
    if len(path) > 1:
        path = path.rstrip("/") or "/"
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _is_tracking(k)]
    return urlunsplit((scheme, netloc, path, urlencode(sorted(query)), ""))


def _is_tracking(key: str) -> bool:
    key = key.lower()
    return key in _TRACKING_KEYS or key.startswith(_TRACKING_PREFIXES)


def _normalise_escapes(path: str) -> str:
    """%-escapes upper-case, and decoded where they encode an unreserved character (RFC 3986 6.2.2)."""

    def fix(match: re.Match[str]) -> str:
        char = chr(int(match.group(0)[1:], 16))
        return char if char in _UNRESERVED else match.group(0).upper()

    return _ESCAPE.sub(fix, path)


def host_of(url: str) -> str:
    """The lower-case host name of a URL ('' when it has none)."""
    try:
        return (urlsplit(url.strip()).hostname or "").rstrip(".").lower()
    except ValueError:
        return ""


def host_matches(host: str, domains: Iterable[str]) -> bool:
    """True when `host` is one of `domains` or a subdomain of one (example.com covers a.example.com)."""
    host = host.lower().rstrip(".")
    return any(host == d or host.endswith("." + d) for d in domains if d)


def domain_permitted(url: str, *, allow: Iterable[str], deny: Iterable[str]) -> bool:
    """The allow/deny lists applied to a URL: denied wins; a non-empty allow list admits only its domains."""
    host = host_of(url)
    allow = tuple(allow)
    if not host or host_matches(host, deny):
        return False
    return not allow or host_matches(host, allow)

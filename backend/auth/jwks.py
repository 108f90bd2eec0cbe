"""The project's signing keys (JWKS): fetched once, cached, refreshed on an unknown key id at a bounded rate.

Blocking (urllib) and thread-safe: call it from a worker thread, never on the event loop. A request
never waits for a fetch unless its key id is unknown or the cache has expired (`ttl_s`). An unknown
key id refreshes the keys at most once per `min_refresh_s`, so a flood of tokens with made-up key ids
cannot make us fetch per request; a failed fetch is retried no sooner either.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
import urllib.request
from collections.abc import Callable

import jwt

from backend.errors import AuthUnavailable, Unauthorized

logger = logging.getLogger(__name__)

# Supabase signs access tokens with ES256 or RS256 keys; a symmetric key never comes from a URL.
ASYMMETRIC_ALGORITHMS = frozenset({"ES256", "RS256"})
_MAX_JWKS_BYTES = 1_000_000

Fetch = Callable[[str, float], bytes]


def shown(value: object, limit: int = 40) -> str:
    """A token-supplied value for a message: repr'd and cut short (it is attacker-controlled)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def fetch_url(url: str, timeout_s: float) -> bytes:
    """GET url; the body, or an OSError/ValueError saying why not."""
    request = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": "pgrag"})
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        body: bytes = response.read(_MAX_JWKS_BYTES + 1)
    if len(body) > _MAX_JWKS_BYTES:
        raise ValueError(f"JWKS larger than {_MAX_JWKS_BYTES} bytes")
    return body


def parse_jwks(body: bytes) -> dict[str, jwt.PyJWK]:
    """Signing keys by kid; keys that are not asymmetric signing keys with a kid are skipped."""
    try:
        document = json.loads(body)
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError('not a JSON Web Key Set (no "keys" list)')
    keys: dict[str, jwt.PyJWK] = {}
    for entry in document["keys"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("kid"), str):
            continue
        if entry.get("use", "sig") != "sig" or entry.get("kty") == "oct":
            continue
        try:
            key = jwt.PyJWK(entry)
        except jwt.PyJWTError as exc:
            logger.warning("JWKS: skipping key %s: %s", entry.get("kid"), exc)
            continue
        if key.algorithm_name in ASYMMETRIC_ALGORITHMS:
            keys[entry["kid"]] = key
    return keys


class JwksCache:
    """Signing keys of one JWKS URL, cached for `ttl_s`; see the module docstring for the fetch rules."""

    def __init__(
        self,
        url: str,
        *,
        ttl_s: float,
        min_refresh_s: float,
        timeout_s: float,
        fetch: Fetch = fetch_url,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self.ttl_s = ttl_s
        self.min_refresh_s = min_refresh_s
        self.timeout_s = timeout_s
        self._fetch = fetch
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at: float | None = None
        self._attempted_at: float | None = None
        self._kid_lookup_at: float | None = None
        self._last_error: str | None = None
        self.fetch_count = 0

    def prefetch(self) -> None:
        """Fetch the keys now (at start-up); AuthUnavailable when they cannot be fetched."""
        with self._lock:
            self._refresh()
        if self._last_error is not None:
            raise AuthUnavailable(f"could not fetch the signing keys from {self.url}: {self._last_error}")

    def key(self, kid: str) -> jwt.PyJWK:
        """The key with this id: Unauthorized if the project has none, AuthUnavailable if unknowable."""
        key = self._keys.get(kid)
        if key is not None and not self._expired():
            return key
        if key is not None:
            # Expired: one thread refreshes, the others keep using the key they have meanwhile.
            if not self._lock.acquire(blocking=False):
                return key
        else:
            self._lock.acquire()
        try:
            if self._expired():
                if self._last_error is None or self._waited(self._attempted_at):
                    self._refresh()
            elif kid not in self._keys and self._waited(self._kid_lookup_at):
                # Fresh keys, unknown kid: a rotation we have not seen yet, or a made-up kid.
                self._kid_lookup_at = self._clock()
                self._refresh()
            key = self._keys.get(kid)
            failed = self._last_error
        finally:
            self._lock.release()
        if key is not None:
            return key
        if failed is not None:
            raise AuthUnavailable(
                "cannot check the access token right now: the sign-in keys are unreachable; try again shortly"
            )
        raise Unauthorized(f"access token signed with an unknown key (kid {shown(kid)})")

    def _expired(self) -> bool:
        return self._fetched_at is None or self._clock() - self._fetched_at >= self.ttl_s

    def _waited(self, since: float | None) -> bool:
        return since is None or self._clock() - since >= self.min_refresh_s

    def _refresh(self) -> None:
        """Fetch and replace the keys (lock held). On failure the old keys stay and the error is kept."""
        self._attempted_at = self._clock()
        self.fetch_count += 1
        try:
            keys = parse_jwks(self._fetch(self.url, self.timeout_s))
        except (OSError, ValueError, http.client.HTTPException) as exc:
            self._last_error = str(exc) or type(exc).__name__
            logger.warning("JWKS fetch from %s failed: %s", self.url, self._last_error)
            return
        if not keys:
            self._last_error = "the key set holds no ES256/RS256 signing key"
            logger.warning("JWKS from %s: %s", self.url, self._last_error)
            return
        self._keys, self._fetched_at, self._last_error = keys, self._attempted_at, None
        logger.info("JWKS: %d signing keys from %s", len(keys), self.url)

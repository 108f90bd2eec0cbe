"""Domain errors. Each maps to one HTTP status in backend/api/errors.py and to a CLI message."""

from __future__ import annotations


class DomainError(Exception):
    """Base of every error a user can cause or fix; the message is shown as-is."""

    status_code = 400


class NotFound(DomainError):
    status_code = 404


class Forbidden(DomainError):
    """The caller is known and may see the thing, but not do this to it."""

    status_code = 403


class RateLimited(DomainError):
    """The caller sent more requests than its limit allows; retry_after_s says when to try again."""

    status_code = 429

    def __init__(self, message: str, *, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class InvalidInput(DomainError):
    status_code = 422


class PayloadTooLarge(DomainError):
    status_code = 413


class ParseLimitExceeded(PayloadTooLarge):
    """A file whose parsing passed a limit (PARSE_TIMEOUT_S, PARSE_MEMORY_MB, PDF_MAX_PAGES,
    MAX_DOCUMENT_CHARS); the message names the setting."""


class EmbeddingModelMismatch(DomainError):
    """The query would be embedded by another model than the corpus was."""

    status_code = 409


class ProviderError(DomainError):
    """An upstream provider (embedding, LLM) failed after retries."""

    status_code = 502


class UnsupportedDocument(DomainError):
    """A file that cannot be turned into text (binary, empty, undecodable, unknown type)."""

    status_code = 415


class ConfigurationError(DomainError):
    """A setting names something that does not exist (e.g. an unknown policy version)."""

    status_code = 500


class WebSearchError(ProviderError):
    """A web search provider failed after retries. The web leg reports it as a diagnostic; it reaches a
    user only if a caller lets it escape (then as 502, never 500). The message never holds a key."""

    def __init__(
        self, message: str, *, provider: str, kind: str, status: int | None = None, attempts: int = 1
    ):
        super().__init__(message)
        self.provider = provider
        self.kind = kind  # backend.web.types.ErrorKind
        self.status = status
        self.attempts = attempts


class UnsafeURL(InvalidInput):
    """A URL the backend refuses to fetch: not http(s), a denied domain, or a private/loopback address."""


class PageFetchError(ProviderError):
    """A web page could not be read (HTTP error, not HTML, unreachable); the hit keeps its snippet."""


class Unauthorized(DomainError):
    """A malformed, expired or otherwise invalid access token (RFC 6750 error "invalid_token")."""

    status_code = 401
    oauth_error: str | None = "invalid_token"


class MissingCredentials(Unauthorized):
    """No access token at all: RFC 6750 says to answer without an error code."""

    oauth_error = None


class LocalSearchTimeout(DomainError, TimeoutError):
    """The search of the caller's documents ran past WEB_LOCAL_TIMEOUT_S beside a web leg."""

    status_code = 504


class AuthUnavailable(DomainError):
    """Credentials cannot be checked right now (the sign-in keys are unreachable): not the caller's fault."""

    status_code = 503

"""The CLI's user-facing error (printed without a stack trace, exit status 2)."""


class CliError(Exception):
    """A user-facing error: printed without a stack trace, exit status 2."""

"""Database access: connection management, the embedded server, migrations and repositories."""

"""Apply supabase/migrations/017_scope_scan_and_inline_metadata.sql."""

from backend.db.migrations import apply_sql_file

revision = "017"
down_revision = "016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("017_scope_scan_and_inline_metadata.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

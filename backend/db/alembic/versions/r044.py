"""Apply supabase/migrations/044_scope_filter_columns.sql."""

from backend.db.migrations import apply_sql_file

revision = "044"
down_revision = "043"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("044_scope_filter_columns.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

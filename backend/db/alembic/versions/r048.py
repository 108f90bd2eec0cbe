"""Apply supabase/migrations/048_counted_scope_read_to_a_quarter_above.sql."""

from backend.db.migrations import apply_sql_file

revision = "048"
down_revision = "047"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("048_counted_scope_read_to_a_quarter_above.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

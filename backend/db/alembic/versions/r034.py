"""Apply supabase/migrations/034_full_text_scope_index.sql."""

from backend.db.migrations import apply_sql_file

revision = "034"
down_revision = "033"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("034_full_text_scope_index.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

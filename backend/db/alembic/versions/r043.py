"""Apply supabase/migrations/043_search_scope_counts_without_a_vector.sql."""

from backend.db.migrations import apply_sql_file

revision = "043"
down_revision = "042"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("043_search_scope_counts_without_a_vector.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

"""Apply supabase/migrations/010_fts_in_heap_row_and_filtered_ef_search.sql."""

from backend.db.migrations import apply_sql_file

revision = "010"
down_revision = "009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("010_fts_in_heap_row_and_filtered_ef_search.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

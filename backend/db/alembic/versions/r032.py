"""Apply supabase/migrations/032_research_run_words.sql."""

from backend.db.migrations import apply_sql_file

revision = "032"
down_revision = "031"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("032_research_run_words.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

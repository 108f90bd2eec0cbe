"""Apply supabase/migrations/009_full_text_match_budget.sql."""

from backend.db.migrations import apply_sql_file

revision = "009"
down_revision = "008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("009_full_text_match_budget.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

"""Apply supabase/migrations/049_one_filter_text_for_both_legs.sql."""

from backend.db.migrations import apply_sql_file

revision = "049"
down_revision = "048"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("049_one_filter_text_for_both_legs.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

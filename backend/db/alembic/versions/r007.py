"""Apply supabase/migrations/007_bm25_full_text_leg.sql."""

from backend.db.migrations import apply_sql_file

revision = "007"
down_revision = "006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("007_bm25_full_text_leg.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

"""Apply supabase/migrations/038_term_rank_unrolled.sql."""

from backend.db.migrations import apply_sql_file

revision = "038"
down_revision = "037"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("038_term_rank_unrolled.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

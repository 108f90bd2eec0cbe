"""Apply supabase/migrations/050_text_only_scope_reads_its_match.sql."""

from backend.db.migrations import apply_sql_file

revision = "050"
down_revision = "049"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("050_text_only_scope_reads_its_match.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

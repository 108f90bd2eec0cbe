"""Apply supabase/migrations/008_rerank_reads_content_tokens.sql."""

from backend.db.migrations import apply_sql_file

revision = "008"
down_revision = "007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("008_rerank_reads_content_tokens.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

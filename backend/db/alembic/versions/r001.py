"""Apply supabase/migrations/001_documents_and_chunks.sql."""

from backend.db.migrations import apply_sql_file

revision = "001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("001_documents_and_chunks.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

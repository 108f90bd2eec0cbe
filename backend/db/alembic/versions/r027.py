"""Apply supabase/migrations/027_hnsw_1024_1536.sql."""

from backend.db.migrations import apply_sql_file

revision = "027"
down_revision = "026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("027_hnsw_1024_1536.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

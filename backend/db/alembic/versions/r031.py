"""Apply supabase/migrations/031_ef_search_hnsw_build.sql."""

from backend.db.migrations import apply_sql_file

revision = "031"
down_revision = "030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("031_ef_search_hnsw_build.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

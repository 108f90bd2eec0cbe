"""Apply supabase/migrations/013_web_search_cache.sql."""

from backend.db.migrations import apply_sql_file

revision = "013"
down_revision = "012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("013_web_search_cache.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

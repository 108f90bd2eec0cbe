"""Apply supabase/migrations/012_web_search_cache.sql."""

from backend.db.migrations import apply_sql_file

revision = "012"
down_revision = "011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("012_web_search_cache.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

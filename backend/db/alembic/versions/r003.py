"""Apply supabase/migrations/003_embedding_cache.sql."""

from backend.db.migrations import apply_sql_file

revision = "003"
down_revision = "002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("003_embedding_cache.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

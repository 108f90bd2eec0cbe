"""Apply supabase/migrations/023_min_similarity_default.sql."""

from backend.db.migrations import apply_sql_file

revision = "023"
down_revision = "022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("023_min_similarity_default.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

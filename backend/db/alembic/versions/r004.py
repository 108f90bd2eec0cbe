"""Apply supabase/migrations/004_retrieval_functions.sql."""

from backend.db.migrations import apply_sql_file

revision = "004"
down_revision = "003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("004_retrieval_functions.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

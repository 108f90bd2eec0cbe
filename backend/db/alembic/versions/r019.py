"""Apply supabase/migrations/019_compile_filters_once.sql."""

from backend.db.migrations import apply_sql_file

revision = "019"
down_revision = "018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("019_compile_filters_once.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

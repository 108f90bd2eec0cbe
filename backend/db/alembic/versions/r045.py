"""Apply supabase/migrations/045_filtered_limit_on_the_copy.sql."""

from backend.db.migrations import apply_sql_file

revision = "045"
down_revision = "044"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("045_filtered_limit_on_the_copy.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

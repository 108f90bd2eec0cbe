"""Apply supabase/migrations/016_scoped_filters_and_exact_scan.sql."""

from backend.db.migrations import apply_sql_file

revision = "016"
down_revision = "015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("016_scoped_filters_and_exact_scan.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

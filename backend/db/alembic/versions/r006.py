"""Apply supabase/migrations/006_term_statistics.sql."""

from backend.db.migrations import apply_sql_file

revision = "006"
down_revision = "005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("006_term_statistics.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

"""Apply supabase/migrations/035_one_pass_margin.sql."""

from backend.db.migrations import apply_sql_file

revision = "035"
down_revision = "034"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("035_one_pass_margin.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

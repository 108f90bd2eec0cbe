"""Apply supabase/migrations/033_scoped_legs_at_1m.sql."""

from backend.db.migrations import apply_sql_file

revision = "033"
down_revision = "032"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("033_scoped_legs_at_1m.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

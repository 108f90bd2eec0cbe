"""Apply supabase/migrations/042_filtered_limit_follows_the_leg.sql."""

from backend.db.migrations import apply_sql_file

revision = "042"
down_revision = "041"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("042_filtered_limit_follows_the_leg.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

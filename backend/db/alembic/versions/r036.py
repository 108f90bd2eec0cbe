"""Apply supabase/migrations/036_exact_leg_visible_matches.sql."""

from backend.db.migrations import apply_sql_file

revision = "036"
down_revision = "035"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("036_exact_leg_visible_matches.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

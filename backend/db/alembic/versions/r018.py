"""Apply supabase/migrations/018_privacy_between_users.sql."""

from backend.db.migrations import apply_sql_file

revision = "018"
down_revision = "017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("018_privacy_between_users.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

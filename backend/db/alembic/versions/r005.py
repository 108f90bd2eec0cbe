"""Apply supabase/migrations/005_message_sources.sql."""

from backend.db.migrations import apply_sql_file

revision = "005"
down_revision = "004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("005_message_sources.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

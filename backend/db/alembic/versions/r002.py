"""Apply supabase/migrations/002_conversations_and_messages.sql."""

from backend.db.migrations import apply_sql_file

revision = "002"
down_revision = "001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("002_conversations_and_messages.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

"""Apply supabase/migrations/022_client_conversation_keys.sql."""

from backend.db.migrations import apply_sql_file

revision = "022"
down_revision = "021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("022_client_conversation_keys.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

"""Apply supabase/migrations/021_api_keys.sql."""

from backend.db.migrations import apply_sql_file

revision = "021"
down_revision = "020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("021_api_keys.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

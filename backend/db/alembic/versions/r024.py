"""Apply supabase/migrations/024_collections.sql."""

from backend.db.migrations import apply_sql_file

revision = "024"
down_revision = "023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("024_collections.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

"""Apply supabase/migrations/025_collection_scopes.sql."""

from backend.db.migrations import apply_sql_file

revision = "025"
down_revision = "024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("025_collection_scopes.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

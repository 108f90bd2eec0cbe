"""Apply supabase/migrations/028_upload_external_id.sql."""

from backend.db.migrations import apply_sql_file

revision = "028"
down_revision = "027"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("028_upload_external_id.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

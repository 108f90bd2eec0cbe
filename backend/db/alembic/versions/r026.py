"""Apply supabase/migrations/026_ingest_jobs.sql."""

from backend.db.migrations import apply_sql_file

revision = "026"
down_revision = "025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("026_ingest_jobs.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

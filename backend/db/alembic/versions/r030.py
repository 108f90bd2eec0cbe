"""Apply supabase/migrations/030_research_evidence_records.sql."""

from backend.db.migrations import apply_sql_file

revision = "030"
down_revision = "029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("030_research_evidence_records.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

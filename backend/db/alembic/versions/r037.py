"""Apply supabase/migrations/037_hnsw_m32.sql."""

from backend.db.migrations import apply_sql_file

revision = "037"
down_revision = "036"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("037_hnsw_m32.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

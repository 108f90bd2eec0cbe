"""Apply supabase/migrations/031_scoped_legs_ef_search.sql."""

from backend.db.migrations import apply_sql_file

revision = "031"
down_revision = "030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("031_scoped_legs_ef_search.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

"""Apply supabase/migrations/014_auth_functions_under_rls.sql."""

from backend.db.migrations import apply_sql_file

revision = "014"
down_revision = "013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("014_auth_functions_under_rls.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

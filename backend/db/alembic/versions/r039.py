"""Apply supabase/migrations/039_exact_scope_vectors.sql."""

from backend.db.migrations import apply_sql_file

revision = "039"
down_revision = "038"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("039_exact_scope_vectors.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

"""Apply supabase/migrations/029_exact_scope_storage.sql."""

from backend.db.migrations import apply_sql_file

revision = "029"
down_revision = "028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("029_exact_scope_storage.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

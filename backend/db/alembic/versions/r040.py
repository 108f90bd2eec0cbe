"""Apply supabase/migrations/040_exact_scope_nearest.sql."""

from backend.db.migrations import apply_sql_file

revision = "040"
down_revision = "039"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("040_exact_scope_nearest.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

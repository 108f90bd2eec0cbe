"""Apply supabase/migrations/046_scope_count_on_its_keys.sql."""

from backend.db.migrations import apply_sql_file

revision = "046"
down_revision = "045"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("046_scope_count_on_its_keys.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

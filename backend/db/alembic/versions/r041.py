"""Apply supabase/migrations/041_filtered_scope_sample.sql."""

from backend.db.migrations import apply_sql_file

revision = "041"
down_revision = "040"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("041_filtered_scope_sample.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

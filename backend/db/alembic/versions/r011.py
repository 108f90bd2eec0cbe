"""Apply supabase/migrations/011_converge_edited_010.sql."""

from backend.db.migrations import apply_sql_file

revision = "011"
down_revision = "010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("011_converge_edited_010.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

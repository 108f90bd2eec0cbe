"""Apply supabase/migrations/013_auth_roles_and_row_level_security.sql."""

from backend.db.migrations import apply_sql_file

revision = "013"
down_revision = "012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("013_auth_roles_and_row_level_security.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

"""Apply supabase/migrations/047_filtered_limit_grows_as_the_cube_root.sql."""

from backend.db.migrations import apply_sql_file

revision = "047"
down_revision = "046"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("047_filtered_limit_grows_as_the_cube_root.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

"""Apply supabase/migrations/020_scoped_caches.sql."""

from backend.db.migrations import apply_sql_file

revision = "020"
down_revision = "019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_sql_file("020_scoped_caches.sql")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only; write a new one")

"""${message}"""

revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = None
depends_on = None


def upgrade() -> None:
    raise NotImplementedError("write SQL in supabase/migrations and use `python -m backend db ship-sql`")


def downgrade() -> None:
    raise NotImplementedError("migrations are forward-only")

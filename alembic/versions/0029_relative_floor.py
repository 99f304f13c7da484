"""A relevance floor relative to the query's best match.

settings.relative_floor (default 0.3): besides reaching the absolute floor
(min_similarity, min_text_match), a candidate must cover that share of the
way from the floor to the best candidate's similarity or text match for the
same query. An absolute floor alone lets a prompt fill to its budget with
memories that merely clear it whenever some memory answers far better.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-05
"""

from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        alter table pgmem.settings
            add column relative_floor real not null default 0.3 check (relative_floor between 0 and 1);
        """
    )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute("alter table pgmem.settings drop column relative_floor")
    op.execute("reset role")

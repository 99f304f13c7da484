"""A fact and the turn that says it word for word are two memories.

memories_active_content held one active row per content in a subject, so a
fact an app stated as such ("User is allergic to shellfish") met its own
turn as the same content and was dropped: the turn stayed, an episode with
no kind, triple or profile line, and the allergy never reached the core
profile. The index now holds one active episode (source turn or store) and
one active fact per content: a turn is still matched only by a turn said
again, and a fact by the same fact.

Revision ID: 0035
Revises: 0034
Create Date: 2026-12-07
"""

from alembic import op

revision = "0035"
down_revision = "0034"
branch_labels = None
depends_on = None

INDEX = """
drop index pgmem.memories_active_content;
create unique index memories_active_content on pgmem.memories (tenant_id, subject, content_hash{extra})
    where status = 'active';
"""


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    # The episode test of pgmem._episode_source, written out: an index
    # expression calling a pgmem function would tie the index to it.
    op.execute(INDEX.format(extra=", (source in ('turn', 'store'))"))
    op.execute("reset role")


def downgrade() -> None:
    # A fact and its turn saying the same cannot both stay active under the
    # old index: the fact goes (archived), as the old write path dropped it.
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        update pgmem.memories as f
        set status = 'archived', status_changed_at = pg_catalog.now(), updated_at = pg_catalog.now()
        where f.status = 'active' and f.source not in ('turn', 'store')
          and exists (select from pgmem.memories as e
                      where e.tenant_id = f.tenant_id and e.subject = f.subject and e.status = 'active'
                        and e.content_hash = f.content_hash and e.source in ('turn', 'store'));
        """
    )
    op.execute(INDEX.format(extra=""))
    op.execute("reset role")

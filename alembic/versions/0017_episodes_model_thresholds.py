"""Episodes as the record, duplicate thresholds of the embedding model.

- memories.source accepts 'turn': a stated turn kept as written (redacted),
  the episode that extracted facts are derived from. The write path never
  deduplicates, merges or supersedes into or out of such a row; only an
  exact re-send reinforces it.
- settings.duplicate_threshold and merge_threshold may be NULL, and are by
  default: NULL is the calibrated value of the tenant's embedding model
  (pgmem.model_thresholds, 66_models.sql). The old defaults 0.95 / 0.85 were
  set for all-MiniLM-L6-v2 and kept when the default embedder became
  multilingual-e5-small, whose similarities crowd together (distinct facts
  about one person score 0.84-0.93): rows still holding both old defaults
  are taken to mean "the default" and become NULL. A tenant that chose other
  values keeps them.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-03
"""

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        alter table pgmem.memories drop constraint memories_source_check;
        alter table pgmem.memories add constraint memories_source_check
            check (source in ('rule', 'llm', 'manual', 'sql', 'import', 'turn'));
        alter table pgmem.settings
            alter column duplicate_threshold drop not null,
            alter column duplicate_threshold drop default,
            alter column merge_threshold drop not null,
            alter column merge_threshold drop default;
        update pgmem.settings set duplicate_threshold = null, merge_threshold = null
        where duplicate_threshold = 0.95::real and merge_threshold = 0.85::real;
        """
    )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        update pgmem.settings
        set duplicate_threshold = coalesce(duplicate_threshold, 0.95),
            merge_threshold = coalesce(merge_threshold, 0.85);
        alter table pgmem.settings
            alter column duplicate_threshold set default 0.95,
            alter column duplicate_threshold set not null,
            alter column merge_threshold set default 0.85,
            alter column merge_threshold set not null;
        update pgmem.memories set source = 'manual' where source = 'turn';
        alter table pgmem.memories drop constraint memories_source_check;
        alter table pgmem.memories add constraint memories_source_check
            check (source in ('rule', 'llm', 'manual', 'sql', 'import'));
        """
    )
    op.execute("reset role")

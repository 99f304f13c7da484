"""Recall measures an embedding's similarity from where its model puts unrelated text.

settings.similarity_base (NULL: the model's, pgmem.model_similarity_base):
recall's relevance reads a candidate's cosine similarity as the share of the
way from that base to 1. multilingual-e5-small scores unrelated texts
0.7-0.8, so its raw similarities spread over a quarter of the range the text
match and the other score parts use, and 0.02 of recency outranked what the
query was about (Chinese set, vector-only recall@5 0.933 without recency,
0.819 with it).

Revision ID: 0034
Revises: 0033
Create Date: 2026-12-07
"""

from alembic import op

revision = "0034"
down_revision = "0033"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        alter table pgmem.settings
            add column similarity_base real check (similarity_base >= 0 and similarity_base < 1);
        comment on column pgmem.settings.similarity_base is
            'The cosine similarity recall''s relevance counts from: a candidate''s similarity s weighs (s - base) / (1 - base), at least 0. NULL: the embedding model''s (pgmem.model_similarity_base), 0 for a model not measured.';
        """
    )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute("alter table pgmem.settings drop column similarity_base")
    op.execute("reset role")

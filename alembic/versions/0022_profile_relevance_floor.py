"""The core profile and the relevance floor.

- settings.profile_limit (default 10), profile_min_importance (0.7) and
  profile_share (0.2): how many facts pgmem.profile selects, from what
  importance a standing instruction or preference is core, and the share of
  a prompt's (or context block's) budget the profile may take. The prompt
  shares together stay under the whole budget.
- settings.min_similarity (NULL: the embedding model's calibrated floor,
  pgmem.model_relevance_floor) and min_text_match: a memory answers a query
  only when its similarity or its text match reaches the floor, whatever
  its importance and recency.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-03
"""

from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        alter table pgmem.settings
            add column profile_limit integer not null default 10 check (profile_limit between 0 and 100),
            add column profile_min_importance real not null default 0.7
                check (profile_min_importance between 0 and 1),
            add column profile_share real not null default 0.2 check (profile_share between 0 and 1),
            add column min_similarity real check (min_similarity between -1 and 1),
            add column min_text_match real not null default 0.2 check (min_text_match between 0 and 1),
            drop constraint settings_prompt_shares,
            add constraint settings_prompt_shares
                check (prompt_share_task + prompt_share_summary + prompt_share_long_term + profile_share < 1);
        """
    )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        alter table pgmem.settings
            drop constraint settings_prompt_shares,
            drop column profile_limit,
            drop column profile_min_importance,
            drop column profile_share,
            drop column min_similarity,
            drop column min_text_match,
            add constraint settings_prompt_shares
                check (prompt_share_task + prompt_share_summary + prompt_share_long_term < 1);
        """
    )
    op.execute("reset role")

"""Memory that stays true: confidence, contradictions and expiry of facts.

- settings.conflict_threshold: cosine similarity from which an active memory
  is a close neighbour of a new fact and is checked for contradiction
  (sql/functions/13_conflict.sql). 0.7: with
  all-MiniLM-L6-v2, restatements of one attribute ("likes dark mode" / "now
  prefers light mode") score 0.6-0.8 and unrelated facts of one user 0.1-0.4.
  Neighbours the offline rules do not decide are queued for the worker's
  LLM judge.
- settings.confidence_rule 0.85 (rule extraction is right most of the time) and
  confidence_llm 0.7 (an LLM fact without its own rating): the confidence
  pgmem.remember stores when the caller gives none; sql, manual and import
  writes default to 1.
- settings.supersede_confidence 0.7: a newer contradicting fact replaces an
  older one when it is at least as confident, or at least this confident
  (pgmem._may_supersede): a hesitant fact does not overturn a certain one.
- settings.judge_conflicts (false): queue the neighbours within
  conflict_threshold that no rule decides for the worker's LLM judge; turn it
  on where the worker has an LLM (without one the job would only be skipped).
- settings.ttl_episodic, ttl_semantic, ttl_procedural: per-kind default
  lifetime from valid_from, NULL (the default) for none; preferences have no
  TTL column: a preference never expires by default.
- memory_events.event gains 'conflict' (a contradiction found or judged
  without a supersession: disputed, coexist, keep); inbox.job gains 'judge'
  (the worker's LLM judge of a close neighbour).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

EVENTS = (
    "'insert', 'reinforce', 'deduplicate', 'merge', 'supersede', 'archive', 'restore', 'delete', 'erase', "
    "'pin', 'unpin', 'update', 'reject', 'purge', 'embed', 'evict'"
)
JOBS = "'turn', 'embed', 'merge'"


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        f"""
alter table pgmem.settings
    add column conflict_threshold real not null default 0.7
        check (conflict_threshold > 0 and conflict_threshold <= 1),
    add column confidence_rule real not null default 0.85 check (confidence_rule between 0 and 1),
    add column confidence_llm real not null default 0.7 check (confidence_llm between 0 and 1),
    add column supersede_confidence real not null default 0.7 check (supersede_confidence between 0 and 1),
    add column judge_conflicts boolean not null default false,
    add column ttl_episodic interval check (ttl_episodic > interval '0'),
    add column ttl_semantic interval check (ttl_semantic > interval '0'),
    add column ttl_procedural interval check (ttl_procedural > interval '0');
alter table pgmem.memory_events drop constraint memory_events_event_check,
    add constraint memory_events_event_check check (event in ({EVENTS}, 'conflict'));
alter table pgmem.inbox drop constraint inbox_job_check,
    add constraint inbox_job_check check (job in ({JOBS}, 'judge'));
"""
    )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        f"""
delete from pgmem.inbox where job = 'judge';
delete from pgmem.memory_events where event = 'conflict';
alter table pgmem.inbox drop constraint inbox_job_check,
    add constraint inbox_job_check check (job in ({JOBS}));
alter table pgmem.memory_events drop constraint memory_events_event_check,
    add constraint memory_events_event_check check (event in ({EVENTS}));
alter table pgmem.settings
    drop column conflict_threshold, drop column confidence_rule, drop column confidence_llm,
    drop column supersede_confidence, drop column judge_conflicts, drop column ttl_episodic,
    drop column ttl_semantic, drop column ttl_procedural;
"""
    )
    op.execute("reset role")

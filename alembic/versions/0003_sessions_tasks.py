"""Short-term and working memory: sessions, their turns and rolling summaries, tasks and their steps.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

NEW_TENANT_TABLES = ("sessions", "session_messages", "session_summaries", "tasks", "task_steps")

# Settings of the two new layers and of the assembled prompt. Defaults and why:
#   window 10 turns / 8000 tokens: the last 10 turns verbatim, and the low end
#   of an 8K-16K hard cap, so a window fits any 16K-context model;
#   window_strategy 'recency' (importance-based selection is opt-in);
#   session_idle 1 day closes a session nobody wrote to; session_retention
#   30 days keeps a closed session's turns that long (summaries stay until
#   the session is erased);
#   task_ttl 1 day, task_max_retries 3: a task nobody touched for a day is
#   abandoned; three retries of one step is the usual agent-loop cap;
#   prompt shares: dialogue gets the most (whatever task, summary and
#   long-term memory leave), long-term 25% (a fifth to a third), summary
#   15%, task 15%.
SETTINGS_COLUMNS = """
alter table pgmem.settings
    add column window_turns integer not null default 10 check (window_turns between 1 and 10000),
    add column window_tokens integer not null default 8000 check (window_tokens between 1 and 1000000),
    add column window_strategy text not null default 'recency' check (window_strategy in ('recency', 'importance')),
    add column max_turn_bytes integer not null default 65536 check (max_turn_bytes between 1 and 1048576),
    add column session_idle interval not null default '1 day' check (session_idle > interval '0'),
    add column session_retention interval not null default '30 days' check (session_retention >= interval '0'),
    add column task_ttl interval not null default '1 day' check (task_ttl > interval '0'),
    add column task_max_retries integer not null default 3 check (task_max_retries between 0 and 1000),
    add column prompt_share_task real not null default 0.15 check (prompt_share_task between 0 and 1),
    add column prompt_share_summary real not null default 0.15 check (prompt_share_summary between 0 and 1),
    add column prompt_share_long_term real not null default 0.25 check (prompt_share_long_term between 0 and 1),
    add column prompt_header boolean not null default true,
    add column prompt_conflicts text not null default 'omit' check (prompt_conflicts in ('omit', 'mark')),
    add constraint settings_prompt_shares
        check (prompt_share_task + prompt_share_summary + prompt_share_long_term < 1);
"""

TABLES = """
-- One row per conversation: the per-session lock that orders appends
-- (next_seq), and how far the rolling summary reaches.
create table pgmem.sessions (
    tenant_id          text not null default pgmem.current_tenant(),
    subject            text not null,
    session_id         text not null check (length(session_id) between 1 and 256),
    agent_id           text,
    status             text not null default 'open' check (status in ('open', 'closed')),
    next_seq           bigint not null default 1 check (next_seq >= 1),
    summarized_through bigint not null default 0 check (summarized_through >= 0),
    -- Turns and tokens not yet folded into the summary: a cheap test of
    -- whether a fold may be due, without computing the window.
    unsummarized_turns  bigint not null default 0,
    unsummarized_tokens bigint not null default 0,
    fold_lease_until   timestamptz,
    created_at         timestamptz not null default now(),
    last_active_at     timestamptz not null default now(),
    closed_at          timestamptz,
    primary key (tenant_id, subject, session_id),
    foreign key (tenant_id, subject) references pgmem.subjects on delete cascade
);
create index sessions_activity on pgmem.sessions (tenant_id, status, last_active_at);

-- The turns, in order. unit_seq groups a tool call with its results: a
-- tool turn carries the seq of the turn that called it.
create table pgmem.session_messages (
    tenant_id  text not null default pgmem.current_tenant(),
    subject    text not null,
    session_id text not null,
    seq        bigint not null check (seq >= 1),
    unit_seq   bigint not null check (unit_seq between 1 and seq),
    role       text not null check (role in ('system', 'user', 'assistant', 'tool')),
    content    text not null,
    tokens     integer not null check (tokens >= 0),
    protected  boolean not null default false,
    metadata   jsonb not null default '{{}}' check (jsonb_typeof(metadata) = 'object'),
    created_at timestamptz not null default now(),
    primary key (tenant_id, subject, session_id, seq),
    foreign key (tenant_id, subject, session_id) references pgmem.sessions on delete cascade
);
-- Turns the window keeps whatever their age.
create index session_messages_kept on pgmem.session_messages (tenant_id, subject, session_id, seq)
    where role = 'system' or protected;

-- Rolling summary, versioned: each version covers turns 1..through_seq
-- (from_seq..through_seq were folded into the previous version).
create table pgmem.session_summaries (
    tenant_id  text not null default pgmem.current_tenant(),
    subject    text not null,
    session_id text not null,
    version    integer not null check (version >= 1),
    from_seq   bigint not null check (from_seq >= 1),
    through_seq bigint not null,
    summary    text not null,
    method     text not null check (method in ('llm', 'extractive')),
    model      text,
    tokens     integer not null check (tokens >= 0),
    created_at timestamptz not null default now(),
    primary key (tenant_id, subject, session_id, version),
    foreign key (tenant_id, subject, session_id) references pgmem.sessions on delete cascade,
    constraint session_summaries_range check (through_seq >= from_seq)
);

-- Working memory: the task in progress.
create table pgmem.tasks (
    tenant_id    text not null default pgmem.current_tenant(),
    task_id      bigint generated always as identity,
    subject      text not null,
    session_id   text,
    goal         text not null check (btrim(goal) <> ''),
    plan         jsonb not null check (jsonb_typeof(plan) = 'array'),
    current_step integer not null default 1 check (current_step >= 1),
    status       text not null default 'planning'
                 check (status in ('planning', 'running', 'waiting_for_confirmation', 'done', 'failed', 'cancelled')),
    variables    jsonb not null default '{{}}' check (jsonb_typeof(variables) = 'object'),
    retries      integer not null default 0 check (retries >= 0),
    max_retries  integer not null check (max_retries >= 0),
    expires_at   timestamptz not null,
    outcome      text,
    learned_rule text,
    memory_id    bigint,
    created_at   timestamptz not null default now(),
    updated_at   timestamptz not null default now(),
    finished_at  timestamptz,
    primary key (tenant_id, task_id),
    foreign key (tenant_id, subject) references pgmem.subjects on delete cascade,
    constraint tasks_finished check ((status in ('done', 'failed', 'cancelled')) = (finished_at is not null))
);
-- The latest unfinished task of a session (resume after a crash).
create index tasks_open on pgmem.tasks (tenant_id, subject, session_id, task_id)
    where status in ('planning', 'running', 'waiting_for_confirmation');
create index tasks_expiry on pgmem.tasks (tenant_id, expires_at)
    where status in ('planning', 'running', 'waiting_for_confirmation');

-- One row per completed (or failed) step: recording a step twice keeps the first.
create table pgmem.task_steps (
    tenant_id   text not null default pgmem.current_tenant(),
    task_id     bigint not null,
    step        integer not null check (step >= 1),
    status      text not null check (status in ('done', 'failed')),
    observation text,
    result      jsonb,
    recorded_at timestamptz not null default now(),
    primary key (tenant_id, task_id, step),
    foreign key (tenant_id, task_id) references pgmem.tasks on delete cascade
);
"""

GRANTS = """
grant select on pgmem.sessions, pgmem.session_messages, pgmem.session_summaries, pgmem.tasks, pgmem.task_steps
    to pgmem_readonly;
grant select, insert, update, delete on pgmem.sessions, pgmem.session_messages, pgmem.tasks to pgmem_app;
-- Summary versions and recorded steps are never rewritten: insert, and
-- delete for erasure, retention and the end of a task.
grant select, insert, delete on pgmem.session_summaries, pgmem.task_steps to pgmem_app;
"""


# The sessions job takes its maintenance lock like the others (0002's _job_locks).
JOB_LOCK = """
alter table pgmem._job_locks drop constraint _job_locks_job_check;
alter table pgmem._job_locks add constraint _job_locks_job_check check (job in ({jobs}));
"""


def _policies(table: str) -> str:
    # The pattern of 0001: forced RLS, the app sees its tenant, readonly sees all.
    is_tenant = "tenant_id = (select pgmem.current_tenant())"
    return f"""
alter table pgmem.{table} enable row level security;
alter table pgmem.{table} force row level security;
create policy tenant_isolation on pgmem.{table} to pgmem_app
    using ({is_tenant}) with check ({is_tenant});
create policy readonly_inspection on pgmem.{table} for select to pgmem_readonly using (true);
create trigger {table}_require_tenant before insert or update or delete on pgmem.{table}
    for each statement execute function pgmem._require_tenant_trigger();
"""


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(SETTINGS_COLUMNS)
    op.execute(TABLES.format())
    for table in NEW_TENANT_TABLES:
        op.execute(_policies(table))
    op.execute(GRANTS)
    op.execute(JOB_LOCK.format(jobs="'archive', 'decay', 'capacity', 'purge', 'sessions'"))
    op.execute("insert into pgmem._job_locks (job) values ('sessions')")
    op.execute("reset role")


# Functions of sql/functions/70_session.sql, 70_session_maintenance.sql, 72_task.sql
# and 74_prompt.sql: they name the tables dropped below, so they go with them.
FUNCTIONS = (
    "_session_salience",
    "_window_units",
    "_session_settings",
    "_check_session_key",
    "append_message",
    "session_window",
    "session_summary",
    "close_session",
    "_fold_through",
    "claim_folds",
    "save_summary",
    "expire_sessions",
    "_task_for_update",
    "_check_plan",
    "start_task",
    "set_task",
    "record_step",
    "fail_step",
    "task_state",
    "resume_task",
    "finish_task",
    "expire_tasks",
    "_fit_tokens",
    "prompt",
)


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute("delete from pgmem._job_locks where job = 'sessions'")
    op.execute(JOB_LOCK.format(jobs="'archive', 'decay', 'capacity', 'purge'"))
    names = ", ".join(f"'{name}'" for name in FUNCTIONS)
    op.execute(
        f"""
do $$
declare
    v_fn regprocedure;
begin
    for v_fn in select p.oid::regprocedure from pg_catalog.pg_proc as p
                where p.pronamespace = 'pgmem'::regnamespace and p.proname in ({names}) loop
        execute 'drop function ' || v_fn::text;
    end loop;
end
$$;
"""
    )
    op.execute(
        "drop table pgmem.task_steps, pgmem.tasks, pgmem.session_summaries, "
        "pgmem.session_messages, pgmem.sessions"
    )
    op.execute(
        """
alter table pgmem.settings
    drop constraint settings_prompt_shares,
    drop column window_turns, drop column window_tokens, drop column window_strategy,
    drop column max_turn_bytes, drop column session_idle, drop column session_retention,
    drop column task_ttl, drop column task_max_retries, drop column prompt_share_task,
    drop column prompt_share_summary, drop column prompt_share_long_term, drop column prompt_header,
    drop column prompt_conflicts;
"""
    )
    op.execute("reset role")

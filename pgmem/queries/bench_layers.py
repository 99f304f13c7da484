"""Every statement of the short-term/working memory benchmark
(:mod:`pgmem.layers_bench`, ``pgmem bench --layers``), by name."""

from __future__ import annotations

from typing import Final

NOW: Final = "select pg_catalog.now() as now"
# A fixed seed: every run generates the same data.
SEED: Final = "select pg_catalog.setseed(0.42)"
CREATE_TENANT: Final = "select pgmem.create_tenant(%(tenant)s)"
CREATE_SUBJECTS: Final = """
insert into pgmem.subjects (tenant_id, subject)
select %(tenant)s, pg_catalog.format('user-%%s', s) from generate_series(0, %(subjects)s - 1) as s
"""
# Each session was active a moment ago and its summary reaches all but the
# last window of turns, as a running system with a worker leaves them.
CREATE_SESSIONS: Final = """
insert into pgmem.sessions (tenant_id, subject, session_id, next_seq, summarized_through,
                            unsummarized_turns, unsummarized_tokens, created_at, last_active_at)
select %(tenant)s, pg_catalog.format('user-%%s', i %% %(subjects)s),
       pg_catalog.format('session-%%s', i),
       %(per_session)s + 1, greatest(%(per_session)s - 10, 0), least(%(per_session)s, 10), 150,
       %(now)s - interval '1 hour', %(now)s
from generate_series(0, %(sessions)s - 1) as i
"""
# Turn n of every session, then turn n + 1 of every session…: the heap
# interleaves sessions as concurrent conversations leave it. Turn 1 is the
# system prompt; every tenth turn from 4 on is a tool result of the call before.
GENERATE_MESSAGES: Final = """
insert into pgmem.session_messages (tenant_id, subject, session_id, seq, unit_seq, role, content,
                                    tokens, protected, created_at)
select %(tenant)s, m.subject, m.session_id, m.n, m.unit_seq, m.role, m.content,
       pgmem._estimate_tokens(m.content), false,
       %(now)s - interval '1 hour' + m.n * interval '1 second'
from (
    select pg_catalog.format('user-%%s', i %% %(subjects)s) as subject,
           pg_catalog.format('session-%%s', i) as session_id, n,
           case when n %% 10 = 4 then n - 1 else n end as unit_seq,
           case when n = 1 then 'system' when n %% 10 = 4 then 'tool'
                when n %% 2 = 0 then 'user' else 'assistant' end as role,
           pg_catalog.format('turn %%s of session %%s: w%%s w%%s and a few more words on topic %%s',
                             n, i, (random() * 500)::integer, (random() * 500)::integer,
                             (random() * 50)::integer) as content
    from generate_series(1, %(per_session)s) as n, generate_series(0, %(sessions)s - 1) as i
) as m
"""
CREATE_SUMMARIES: Final = """
insert into pgmem.session_summaries (tenant_id, subject, session_id, version, from_seq, through_seq,
                                     summary, method, tokens)
select s.tenant_id, s.subject, s.session_id, 1, 1, s.summarized_through,
       pg_catalog.repeat('The user discussed plans, dates and amounts. ', 8), 'llm', 90
from pgmem.sessions as s
where s.summarized_through > 0
"""
CREATE_TASKS: Final = """
insert into pgmem.tasks (tenant_id, subject, session_id, goal, plan, current_step, status,
                         variables, max_retries, expires_at)
select s.tenant_id, s.subject, s.session_id, 'finish the task of ' || s.session_id,
       '["search", "compare", "choose", "book", "confirm"]', 3, 'running', '{"k": 1}', 3,
       %(now)s + interval '1 day'
from pgmem.sessions as s
"""
CREATE_STEPS: Final = """
insert into pgmem.task_steps (tenant_id, task_id, step, status, observation)
select t.tenant_id, t.task_id, g, 'done', 'observation of step ' || g
from pgmem.tasks as t, generate_series(1, 2) as g
"""
# Long-term memories for the prompt-versus-recall comparison (text only).
GENERATE_MEMORIES: Final = """
insert into pgmem.memories (tenant_id, subject, kind, content, importance)
select %(tenant)s, pg_catalog.format('user-%%s', s), 'semantic',
       pg_catalog.format('fact %%s of user-%%s: w%%s w%%s topic %%s', j, s,
                         (random() * 500)::integer, (random() * 500)::integer,
                         (random() * 50)::integer),
       0.5
from generate_series(1, %(memories_per_subject)s) as j, generate_series(0, %(subjects)s - 1) as s
"""
ANALYZE: Final = (
    "analyze pgmem.sessions, pgmem.session_messages, pgmem.session_summaries, pgmem.tasks,"
    " pgmem.task_steps, pgmem.memories"
)
SIZES: Final = """
select (select pg_catalog.count(*) from pgmem.session_messages) as messages,
       (select pg_catalog.count(*) from pgmem.sessions) as sessions,
       pg_catalog.pg_table_size('pgmem.session_messages') as table_bytes,
       pg_catalog.pg_indexes_size('pgmem.session_messages') as index_bytes
"""
PICK_SESSIONS: Final = """
select pg_catalog.format('user-%%s', i %% %(subjects)s) as subject,
       pg_catalog.format('session-%%s', i) as session_id,
       pg_catalog.format('w%%s topic %%s', (random() * 500)::integer, (random() * 50)::integer)
           as query
from (select (random() * (%(sessions)s - 1))::integer as i from generate_series(1, %(n)s)) as q
"""
# Server-side cost of n appends, each to a random session, in one statement.
APPEND_MANY: Final = """
explain (analyze, timing off, summary on, format json)
select pg_catalog.count(a.seq)
from generate_series(1, %(n)s) as g
cross join lateral (select (random() * (%(sessions)s - 1))::integer as i where g > 0) as r
cross join lateral pgmem.append_message(pg_catalog.format('user-%%s', r.i %% %(subjects)s),
                                        pg_catalog.format('session-%%s', r.i), %(role)s,
                                        'an appended turn about topic ' || g) as a
"""
APPEND_ONE: Final = """
select a.seq from pgmem.append_message(%(subject)s, %(session_id)s, 'assistant',
                                       'an appended turn from the client') as a
"""
# What an agent reads before each LLM call when it assembles the prompt itself.
READ_LAYERS: Final = """
explain (analyze, timing off, summary on, format json)
select (select pg_catalog.count(*) from pgmem.session_window(%(subject)s, %(session_id)s)),
       (select pg_catalog.count(*) from pgmem.session_summary(%(subject)s, %(session_id)s)),
       (select pg_catalog.count(*) from pgmem.resume_task(%(subject)s, %(session_id)s))
"""
PROMPT: Final = """
explain (analyze, timing off, summary on, format json)
select pgmem.prompt(%(subject)s, %(session_id)s, %(query)s, p_reinforce => false)
"""
RECALL: Final = """
explain (analyze, timing off, summary on, format json)
select * from pgmem.recall(%(subject)s, %(query)s, p_k => 10, p_reinforce => false)
"""

"""Every statement of the short-term and working memory layers and of the assembled
prompt (:mod:`pgmem.session`, :mod:`pgmem.task`, the worker's fold pass, the
``pgmem session``/``pgmem task``/``pgmem prompt`` verbs), by name."""

from __future__ import annotations

from typing import Final

APPEND_MESSAGE: Final = """
select r.seq, r.inbox_id
from pgmem.append_message(
    p_subject => %(subject)s::text,
    p_session_id => %(session_id)s::text,
    p_role => %(role)s::text,
    p_content => %(content)s::text,
    p_protected => %(protected)s::boolean,
    p_metadata => %(metadata)s::jsonb,
    p_extract => %(extract)s::boolean,
    p_agent_id => %(agent_id)s::text
) as r
"""
SESSION_WINDOW: Final = """
select w.seq, w.role, w.content, w.tokens, w.protected, w.unit_seq, w.metadata, w.created_at
from pgmem.session_window(%(subject)s::text, %(session_id)s::text, %(turns)s::integer,
                          %(tokens)s::integer, %(strategy)s::text) as w
"""
SESSION_SUMMARY: Final = """
select s.version, s.from_seq, s.through_seq, s.summary, s.method, s.model, s.tokens, s.created_at
from pgmem.session_summary(%(subject)s::text, %(session_id)s::text, %(version)s::integer) as s
"""
CLOSE_SESSION: Final = (
    "select pgmem.close_session(%(subject)s::text, %(session_id)s::text) as closed"
)
LIST_SESSIONS: Final = """
select s.subject, s.session_id, s.status, s.next_seq - 1 as turns, s.summarized_through,
       s.created_at, s.last_active_at, s.closed_at
from pgmem.sessions as s
where (%(subject)s::text is null or s.subject = %(subject)s::text)
order by s.last_active_at desc
limit %(limit)s
"""
PROMPT: Final = """
select pgmem.prompt(
    p_subject => %(subject)s::text,
    p_session_id => %(session_id)s::text,
    p_query => %(query)s::text,
    p_embedding => pgmem.query_vector(%(embedding)b::float8[]),
    p_token_budget => %(token_budget)s::integer,
    p_reinforce => %(reinforce)s::boolean
) as prompt
"""
START_TASK: Final = """
select pgmem.start_task(
    p_subject => %(subject)s::text,
    p_goal => %(goal)s::text,
    p_plan => %(plan)s::jsonb,
    p_session_id => %(session_id)s::text,
    p_variables => %(variables)s::jsonb,
    p_status => %(status)s::text,
    p_max_retries => %(max_retries)s::integer,
    p_ttl => %(ttl)s::interval
) as task_id
"""
SET_TASK: Final = """
select pgmem.set_task(%(task_id)s::bigint, %(status)s::text, %(variables)s::jsonb,
                      %(plan)s::jsonb, %(current_step)s::integer)
"""
RECORD_STEP: Final = """
select r.recorded, r.current_step, r.status
from pgmem.record_step(%(task_id)s::bigint, %(step)s::integer, %(observation)s::text,
                       %(result)s::jsonb, %(variables)s::jsonb) as r
"""
FAIL_STEP: Final = """
select r.retries, r.status
from pgmem.fail_step(%(task_id)s::bigint, %(step)s::integer, %(error)s::text) as r
"""
FINISH_TASK: Final = """
select r.memory_id, r.procedure_id
from pgmem.finish_task(%(task_id)s::bigint, %(status)s::text, %(outcome)s::text,
                       %(learned_rule)s::text) as r
"""
TASK_STATE: Final = "select t.* from pgmem.task_state(%(task_id)s::bigint) as t"
RESUME_TASK: Final = (
    "select t.* from pgmem.resume_task(%(subject)s::text, %(session_id)s::text) as t"
)
LIST_TASKS: Final = """
select t.task_id, t.subject, t.session_id, t.goal, t.status, t.current_step,
       pg_catalog.jsonb_array_length(t.plan) as steps, t.retries, t.expires_at, t.updated_at
from pgmem.tasks as t
where (%(subject)s::text is null or t.subject = %(subject)s::text)
  and (%(statuses)s::text[] is null or t.status = any(%(statuses)s::text[]))
order by t.task_id desc
limit %(limit)s
"""
# The worker's fold pass (sql/functions/70_session_maintenance.sql).
CLAIM_FOLDS: Final = "select * from pgmem.claim_folds(%(limit)s)"
SAVE_SUMMARY: Final = """
select pgmem.save_summary(%(subject)s::text, %(session_id)s::text, %(from_seq)s::bigint,
                          %(through_seq)s::bigint, %(summary)s::text, %(method)s::text,
                          %(model)s::text) as version
"""

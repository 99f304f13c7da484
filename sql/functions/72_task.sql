-- Working memory: the state of the task in progress.
--
-- Two-phase writes: pgmem.start_task writes the goal and the plan (ordered
-- steps) first; pgmem.record_step records each step when it completes, in
-- its own transaction, keyed (task, step): recording step 3 again after a
-- crash changes nothing and says so. An agent that crashed calls
-- pgmem.resume_task(subject, session) and continues after the last
-- completed step. pgmem.finish_task ends the task: its scratch state
-- (variables, step observations) is cleared and what was done is distilled
-- into long-term memory, an episodic memory (and a procedural one for a
-- learned rule, linked derived_from the episode) whose metadata names the
-- task. The sessions maintenance job cancels tasks past their expiry.

create or replace function pgmem._task_for_update(p_task_id bigint)
returns pgmem.tasks
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_task pgmem.tasks;
begin
    select t.* into v_task
    from pgmem.tasks as t
    where t.tenant_id = pgmem._require_tenant() and t.task_id = p_task_id
    for update;
    if not found then
        raise exception 'unknown task: p_task_id = %', coalesce(p_task_id::text, 'NULL')
            using errcode = 'PM080', hint = 'Start one with pgmem.start_task; pgmem.resume_task finds the open one.';
    end if;
    if v_task.status in ('done', 'failed', 'cancelled') then
        raise exception 'task % is already finished (%)', p_task_id, v_task.status
            using errcode = 'PM082', hint = 'Start a new task; a finished task''s outcome is in long-term memory.';
    end if;
    return v_task;
end
$$;

comment on function pgmem._task_for_update(bigint) is
    'Locks an unfinished task of the bound tenant: PM080 unknown, PM082 already finished (internal).';

create or replace function pgmem._check_plan(p_plan jsonb)
returns void
language plpgsql
immutable
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_plan is null or pg_catalog.jsonb_typeof(p_plan) <> 'array' or pg_catalog.jsonb_array_length(p_plan) = 0
       or exists (select from pg_catalog.jsonb_array_elements(p_plan) as s(step)
                  where pg_catalog.jsonb_typeof(s.step) <> 'string' or pg_catalog.btrim(s.step #>> '{}') = '') then
        raise exception 'p_plan must be a non-empty JSON array of step texts'
            using errcode = 'PM081', hint = 'e.g. ''["find flights", "book the cheapest", "email the receipt"]''.';
    end if;
end
$$;

comment on function pgmem._check_plan(jsonb) is
    'PM081 unless the plan is a non-empty JSON array of non-blank strings (internal).';

create or replace function pgmem.start_task(
    p_subject text,
    p_goal text,
    p_plan jsonb,
    p_session_id text default null,
    p_variables jsonb default '{}',
    p_status text default 'running',
    p_max_retries integer default null,
    p_ttl interval default null,
    p_now timestamptz default null
)
returns bigint
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._require_tenant();
    v_settings pgmem.settings := pgmem._session_settings(v_tenant);
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_id bigint;
begin
    if p_subject is null or pg_catalog.btrim(p_subject) = '' or pg_catalog.length(p_subject) > 256 then
        raise exception 'p_subject must be a non-blank text of at most 256 characters'
            using errcode = 'PM010', hint = 'Pass the user (or other subject) the task is for.';
    end if;
    if p_goal is null or pg_catalog.btrim(p_goal) = '' then
        raise exception 'p_goal is empty' using errcode = 'PM011', hint = 'Say what the task is for.';
    end if;
    perform pgmem._check_plan(p_plan);
    if p_variables is null or pg_catalog.jsonb_typeof(p_variables) <> 'object' then
        raise exception 'p_variables must be a JSON object' using errcode = 'PM020', hint = 'Pass ''{}'' for none.';
    end if;
    if p_status is null or p_status not in ('planning', 'running', 'waiting_for_confirmation') then
        raise exception 'a task starts planning, running or waiting_for_confirmation, not %',
                        coalesce(pg_catalog.quote_literal(p_status), 'NULL')
            using errcode = 'PM083', hint = 'End a task with pgmem.finish_task.';
    end if;
    if p_max_retries < 0 or p_ttl <= interval '0' then
        raise exception 'p_max_retries must be zero or more and p_ttl positive'
            using errcode = 'PM083', hint = 'Omit them for the tenant''s task_max_retries and task_ttl.';
    end if;
    perform pgmem._require_subject(v_tenant, array[p_subject]);
    insert into pgmem.subjects (tenant_id, subject) values (v_tenant, p_subject) on conflict do nothing;
    insert into pgmem.tasks (tenant_id, subject, session_id, goal, plan, status, variables, max_retries, expires_at,
                             created_at, updated_at)
    values (v_tenant, p_subject, p_session_id, p_goal, p_plan, p_status, p_variables,
            coalesce(p_max_retries, v_settings.task_max_retries), v_now + coalesce(p_ttl, v_settings.task_ttl),
            v_now, v_now)
    returning task_id into v_id;
    return v_id;
end
$$;

comment on function pgmem.start_task(text, text, jsonb, text, jsonb, text, integer, interval, timestamptz) is
    'Starts a task: goal, plan (JSON array of step texts), optional session and variables; status running (or '
    'planning, waiting_for_confirmation); retries capped at p_max_retries and expiry after p_ttl of inactivity '
    '(defaults: the tenant''s task_max_retries 3 and task_ttl 1 day). Returns the task id. PM010 subject, PM011 '
    'goal, PM081 plan, PM020 variables, PM083 status or limits.';

create or replace function pgmem.set_task(
    p_task_id bigint,
    p_status text default null,
    p_variables jsonb default null,
    p_plan jsonb default null,
    p_current_step integer default null,
    p_now timestamptz default null
)
returns void
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_task pgmem.tasks := pgmem._task_for_update(p_task_id);
    v_settings pgmem.settings := pgmem._session_settings(v_task.tenant_id);
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_plan jsonb := coalesce(p_plan, v_task.plan);
begin
    if p_status is not null and p_status not in ('planning', 'running', 'waiting_for_confirmation') then
        raise exception 'set_task moves a task between planning, running and waiting_for_confirmation, not %',
                        pg_catalog.quote_literal(p_status)
            using errcode = 'PM083', hint = 'End a task with pgmem.finish_task.';
    end if;
    if p_variables is not null and pg_catalog.jsonb_typeof(p_variables) <> 'object' then
        raise exception 'p_variables must be a JSON object' using errcode = 'PM020',
            hint = 'Its keys are merged into the task''s variables; a key set to null stays, as null.';
    end if;
    perform pgmem._check_plan(v_plan);
    if p_current_step is not null and (p_current_step < 1 or p_current_step > pg_catalog.jsonb_array_length(v_plan) + 1) then
        raise exception 'step % is out of range: the plan has % steps', p_current_step,
                        pg_catalog.jsonb_array_length(v_plan)
            using errcode = 'PM081', hint = 'Steps count from 1; plan length + 1 means every step is done.';
    end if;
    update pgmem.tasks as t
    set status = coalesce(p_status, t.status),
        variables = t.variables || coalesce(p_variables, '{}'),
        plan = v_plan,
        current_step = coalesce(p_current_step, t.current_step),
        expires_at = greatest(t.expires_at, v_now + v_settings.task_ttl),
        updated_at = v_now
    where t.tenant_id = v_task.tenant_id and t.task_id = p_task_id;
end
$$;

comment on function pgmem.set_task(bigint, text, jsonb, jsonb, integer, timestamptz) is
    'Updates an unfinished task: status (planning, running, waiting_for_confirmation), variables (merged), plan, '
    'current step; pushes its expiry to task_ttl from now. PM080 unknown, PM082 finished, PM081 plan or step, '
    'PM083 status.';

-- The plan and id, not the task row: a function of the table's row type would
-- hold up dropping the table on a downgrade.
create or replace function pgmem._check_step(p_task_id bigint, p_plan jsonb, p_step integer, p_hint text)
returns void
language plpgsql
immutable
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_step is null or p_step < 1 or p_step > pg_catalog.jsonb_array_length(p_plan) then
        raise exception 'step % is out of range: the plan of task % has % steps', coalesce(p_step::text, 'NULL'),
                        p_task_id, pg_catalog.jsonb_array_length(p_plan)
            using errcode = 'PM081', hint = p_hint;
    end if;
end
$$;

comment on function pgmem._check_step(bigint, jsonb, integer, text) is
    'Error PM081 unless p_step is a step of the task''s plan (1 to its length): record_step and fail_step (internal).';

create or replace function pgmem.record_step(
    p_task_id bigint,
    p_step integer,
    p_observation text default null,
    p_result jsonb default null,
    p_variables jsonb default null,
    p_now timestamptz default null
)
returns table (recorded boolean, current_step integer, status text)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_task pgmem.tasks := pgmem._task_for_update(p_task_id);
    v_settings pgmem.settings := pgmem._session_settings(v_task.tenant_id);
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_recorded boolean;
begin
    perform pgmem._check_step(p_task_id, v_task.plan, p_step, 'Steps count from 1; extend the plan with pgmem.set_task first.');
    if p_variables is not null and pg_catalog.jsonb_typeof(p_variables) <> 'object' then
        raise exception 'p_variables must be a JSON object' using errcode = 'PM020', hint = 'Pass NULL for none.';
    end if;
    -- The first record of a step wins: a replay after a crash is a no-op.
    insert into pgmem.task_steps (tenant_id, task_id, step, status, observation, result, recorded_at)
    values (v_task.tenant_id, p_task_id, p_step, 'done', p_observation, p_result, v_now)
    on conflict do nothing;
    v_recorded := found;
    if v_recorded then
        update pgmem.tasks as t
        set current_step = greatest(t.current_step, p_step + 1),
            status = case when t.status = 'planning' then 'running' else t.status end,
            variables = t.variables || coalesce(p_variables, '{}'),
            retries = 0,
            expires_at = greatest(t.expires_at, v_now + v_settings.task_ttl),
            updated_at = v_now
        where t.tenant_id = v_task.tenant_id and t.task_id = p_task_id;
    end if;
    return query
    select v_recorded, t.current_step, t.status
    from pgmem.tasks as t where t.tenant_id = v_task.tenant_id and t.task_id = p_task_id;
end
$$;

comment on function pgmem.record_step(bigint, integer, text, jsonb, jsonb, timestamptz) is
    'Records that step p_step of a task completed, with its observation/tool result and variables to merge; '
    'idempotent: recording a step again returns recorded = false and changes nothing. Moves current_step past it '
    'and resets the retry count. PM080 unknown task, PM082 finished, PM081 step out of range.';

create or replace function pgmem.fail_step(
    p_task_id bigint,
    p_step integer,
    p_error text,
    p_now timestamptz default null
)
returns table (retries integer, status text)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_task pgmem.tasks := pgmem._task_for_update(p_task_id);
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
begin
    perform pgmem._check_step(p_task_id, v_task.plan, p_step, 'Steps count from 1.');
    if v_task.retries + 1 > v_task.max_retries then
        -- Out of retries: the task fails, and is distilled like any other end.
        perform pgmem.finish_task(p_task_id, 'failed',
                                  pg_catalog.format('step %s failed after %s retries: %s', p_step, v_task.retries,
                                                    coalesce(p_error, 'no error text')),
                                  null, v_now);
    else
        update pgmem.tasks as t
        set retries = t.retries + 1, updated_at = v_now
        where t.tenant_id = v_task.tenant_id and t.task_id = p_task_id;
    end if;
    return query
    select t.retries, t.status from pgmem.tasks as t where t.tenant_id = v_task.tenant_id and t.task_id = p_task_id;
end
$$;

comment on function pgmem.fail_step(bigint, integer, text, timestamptz) is
    'Counts a failed attempt at a step; past the task''s max_retries the task ends as failed (pgmem.finish_task). '
    'Returns the retry count and status. PM080, PM082, PM081 as record_step.';

create or replace function pgmem.task_state(p_task_id bigint)
returns table (
    task_id bigint, subject text, session_id text, goal text, plan jsonb, current_step integer, status text,
    variables jsonb, retries integer, max_retries integer, expires_at timestamptz, last_completed_step integer,
    steps jsonb, outcome text, memory_id bigint, created_at timestamptz, updated_at timestamptz,
    finished_at timestamptz
)
language sql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select t.task_id, t.subject, t.session_id, t.goal, t.plan, t.current_step, t.status, t.variables, t.retries,
           t.max_retries, t.expires_at,
           (select pg_catalog.max(s.step) from pgmem.task_steps as s
            where s.tenant_id = t.tenant_id and s.task_id = t.task_id and s.status = 'done'),
           (select coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                       'step', s.step, 'status', s.status, 'observation', s.observation, 'result', s.result,
                       'recorded_at', s.recorded_at) order by s.step), '[]')
            from pgmem.task_steps as s where s.tenant_id = t.tenant_id and s.task_id = t.task_id),
           t.outcome, t.memory_id, t.created_at, t.updated_at, t.finished_at
    from pgmem.tasks as t
    where t.tenant_id = pgmem._require_tenant() and t.task_id = p_task_id
$$;

comment on function pgmem.task_state(bigint) is
    'A task of the bound tenant with its recorded steps (JSON array) and last completed step; no row if unknown.';

create or replace function pgmem.resume_task(p_subject text, p_session_id text default null)
returns table (
    task_id bigint, subject text, session_id text, goal text, plan jsonb, current_step integer, status text,
    variables jsonb, retries integer, max_retries integer, expires_at timestamptz, last_completed_step integer,
    steps jsonb, outcome text, memory_id bigint, created_at timestamptz, updated_at timestamptz,
    finished_at timestamptz
)
language sql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select s.*
    from (select t.task_id from pgmem.tasks as t
          where t.tenant_id = pgmem._require_tenant() and t.subject = p_subject
            and t.session_id is not distinct from p_session_id
            and t.status in ('planning', 'running', 'waiting_for_confirmation')
          order by t.task_id desc
          limit 1) as latest
    cross join lateral pgmem.task_state(latest.task_id) as s
$$;

comment on function pgmem.resume_task(text, text) is
    'The latest unfinished task of a subject''s session (p_session_id NULL: tasks without a session) with its '
    'steps and last completed step: what an agent that crashed continues from. No row if none is open.';

create or replace function pgmem.finish_task(
    p_task_id bigint,
    p_status text default 'done',
    p_outcome text default null,
    p_learned_rule text default null,
    p_now timestamptz default null
)
returns table (memory_id bigint, procedure_id bigint)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_task pgmem.tasks := pgmem._task_for_update(p_task_id);
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_steps text;
    v_episode bigint;
    v_procedure bigint;
    v_metadata jsonb;
begin
    if p_status is null or p_status not in ('done', 'failed', 'cancelled') then
        raise exception 'a task finishes done, failed or cancelled, not %',
                        coalesce(pg_catalog.quote_literal(p_status), 'NULL')
            using errcode = 'PM083', hint = 'pgmem.set_task moves an unfinished task between the other states.';
    end if;
    -- What was done, in plan order: each completed step and the start of its observation.
    select pg_catalog.string_agg(pg_catalog.format('%s. %s%s', p.n, p.step #>> '{}',
                                                   ' → ' || pg_catalog.left(pg_catalog.regexp_replace(
                                                       s.observation, '\s+', ' ', 'g'), 200)),
                                 '; ' order by p.n)
    into v_steps
    from pg_catalog.jsonb_array_elements(v_task.plan) with ordinality as p(step, n)
    join pgmem.task_steps as s
      on s.tenant_id = v_task.tenant_id and s.task_id = p_task_id and s.step = p.n and s.status = 'done';
    v_metadata := pg_catalog.jsonb_build_object('derived_from', pg_catalog.jsonb_build_object('task_id', p_task_id),
                                                'task_status', p_status);
    -- Long-term memory keeps a bounded account; max_content_bytes is 16 KB by default.
    select r.memory_id into v_episode
    from pgmem.remember(v_task.subject,
                        pg_catalog.left(pg_catalog.format('Task "%s" %s. Steps done: %s.%s', v_task.goal,
                                                          case p_status when 'done' then 'completed'
                                                                        else p_status end,
                                                          coalesce(v_steps, 'none'),
                                                          ' Outcome: ' || p_outcome), 4000),
                        p_kind => 'episodic', p_session_id => v_task.session_id, p_source => 'sql',
                        p_metadata => v_metadata, p_now => v_now) as r;
    if p_learned_rule is not null and pg_catalog.btrim(p_learned_rule) <> '' then
        select r.memory_id into v_procedure
        from pgmem.remember(v_task.subject, p_learned_rule, p_kind => 'procedural', p_session_id => v_task.session_id,
                            p_source => 'sql', p_metadata => v_metadata, p_now => v_now) as r;
        if v_procedure is not null and v_episode is not null and v_procedure <> v_episode then
            insert into pgmem.memory_links (tenant_id, from_id, to_id, link_type)
            values (v_task.tenant_id, v_procedure, v_episode, 'derived_from')
            on conflict do nothing;
        end if;
    end if;
    -- The scratch state goes; the task row stays as the record of what happened.
    -- With the owner's rights: app roles hold no DELETE privilege (71_owner_writes.sql).
    perform pgmem._clear_task_steps(array[v_task.tenant_id], array[p_task_id]);
    update pgmem.tasks as t
    set status = p_status, outcome = p_outcome, learned_rule = p_learned_rule, variables = '{}',
        memory_id = v_episode, finished_at = v_now, updated_at = v_now
    where t.tenant_id = v_task.tenant_id and t.task_id = p_task_id;
    return query select v_episode, v_procedure;
end
$$;

comment on function pgmem.finish_task(bigint, text, text, text, timestamptz) is
    'Ends a task (done, failed or cancelled): distils it into an episodic memory (goal, completed steps, outcome) '
    'and, given p_learned_rule, a procedural memory linked derived_from the episode, both with metadata '
    '{"derived_from": {"task_id": …}}; then clears its variables and step observations. Returns both memory ids. '
    'PM080 unknown, PM082 already finished, PM083 bad status.';

create or replace function pgmem.expire_tasks(p_now timestamptz default pg_catalog.now(), p_tenant text default null)
returns bigint
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._maintenance_scope(p_tenant);
    v_tenants text[];
    v_ids bigint[];
    v_count bigint;
begin
    -- Abandoned, not finished: no memory is distilled from a task nobody ended.
    with expired as (
        update pgmem.tasks as t
        set status = 'cancelled', outcome = 'expired', variables = '{}', finished_at = p_now, updated_at = p_now
        where t.status in ('planning', 'running', 'waiting_for_confirmation') and t.expires_at < p_now
          and (v_tenant is null or t.tenant_id = v_tenant)
        returning t.tenant_id, t.task_id
    )
    select pg_catalog.array_agg(e.tenant_id), pg_catalog.array_agg(e.task_id), pg_catalog.count(*)
    into v_tenants, v_ids, v_count
    from expired as e;
    -- Their scratch state goes with the owner's rights (71_owner_writes.sql).
    if v_count > 0 then
        perform pgmem._clear_task_steps(v_tenants, v_ids);
    end if;
    return v_count;
end
$$;

comment on function pgmem.expire_tasks(timestamptz, text) is
    'Cancels unfinished tasks whose expiry passed before p_now (outcome ''expired'') and clears their scratch state; '
    'returns how many. Part of the sessions maintenance job.';

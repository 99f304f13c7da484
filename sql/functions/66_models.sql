-- Which embedding model a tenant's vectors come from, and moving a tenant to
-- another model (re-embedding).
--
-- settings.embedding_model is the model of every vector stored for the
-- tenant; NULL until a client first declares its model (then recorded). A
-- client declares the model of the vectors it is about to pass with
-- pgmem.use_embedding_model(model) once per transaction (the Python client
-- and the worker do it with their tenant binding); every place a vector is
-- checked (pgmem._check_embedding_stats: recall, context, prompt, remember,
-- remember_many, update_memory, set_embedding) then refuses a vector of
-- another model with PM025, so recall never compares vectors of two models.
-- A session that declares nothing gets only the dimension check (PM015).
--
-- Re-embedding (pgmem.start_reembed): the worker embeds every memory that has
-- a vector with the new model ('embed' inbox jobs, payload.reembed = model)
-- and stages the vectors in pgmem.reembed_vectors (pgmem.stage_reembed). The
-- stored vectors stay those of the old model meanwhile; the job that stages
-- the last missing vector swaps all of them into pgmem.memories and switches
-- settings.embedding_model in the same transaction.
--
-- Error codes:
--   PM025  a vector of another model than the tenant's (settings.embedding_model)
--   PM028  re-embed refused: blank model, the tenant's own model, another
--          re-embed running, or no re-embed to that model running (stage)

create or replace function pgmem._check_embedding_model(p_settings pgmem.settings, p_model text default null)
returns void
language plpgsql
stable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    -- The model named by the caller, else the one the transaction declared.
    v_model text := coalesce(nullif(p_model, ''),
                             nullif(pg_catalog.current_setting('pgmem.embedding_model', true), ''));
begin
    if v_model is not null and p_settings.embedding_model is not null
       and v_model <> p_settings.embedding_model then
        raise exception 'embedding from model %, but tenant % stores vectors of model %',
                        v_model, p_settings.tenant_id, p_settings.embedding_model
            using errcode = 'PM025',
                  hint = pg_catalog.format(
                      'Embed with %s (PGMEM_EMBEDDER / PGMEM_EMBED_MODEL), or move the tenant to %s '
                      'with `pgmem reembed --model %s` and a worker running that model.',
                      p_settings.embedding_model, v_model, v_model);
    end if;
end
$$;

comment on function pgmem._check_embedding_model(pgmem.settings, text) is
    'Raises PM025 when p_model (default: the model this transaction declared with pgmem.use_embedding_model) is not the tenant''s settings.embedding_model; nothing when either is unknown (internal).';

-- SECURITY DEFINER: records the bound tenant's model in its own settings row,
-- which applications may read but not write; only a NULL model is filled in.
create or replace function pgmem._record_embedding_model(p_tenant text, p_model text)
returns text
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_model text;
begin
    perform pgmem._require_session_for(p_tenant);
    update pgmem.settings as s set embedding_model = p_model, updated_at = pg_catalog.now()
    where s.tenant_id = p_tenant and s.embedding_model is null
    returning s.embedding_model into v_model;
    if v_model is null then
        select s.embedding_model into v_model from pgmem.settings as s where s.tenant_id = p_tenant;
    end if;
    return v_model;
end
$$;

comment on function pgmem._record_embedding_model(text, text) is
    'Sets settings.embedding_model of p_tenant to p_model when none is recorded; returns the recorded model (internal, owner rights).';

create or replace function pgmem.use_embedding_model(p_model text, p_local boolean default true)
returns text
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._require_tenant();
    v_model text := nullif(pg_catalog.btrim(p_model), '');
    v_recorded text;
begin
    v_recorded := (select s.embedding_model from pgmem.settings as s where s.tenant_id = v_tenant);
    if v_recorded is null and v_model is not null then
        -- Only the first time: every worker job declares its model, and an update
        -- of the settings reference table locks its every placement on Citus.
        v_recorded := pgmem._record_embedding_model(v_tenant, v_model);
    end if;
    if p_local then
        -- SET LOCAL, as pgmem.set_tenant: on Citus it reaches the worker sessions too.
        execute pg_catalog.format('set local pgmem.embedding_model = %L', coalesce(v_model, ''));
    else
        perform pg_catalog.set_config('pgmem.embedding_model', coalesce(v_model, ''), false);
    end if;
    return v_recorded;
end
$$;

comment on function pgmem.use_embedding_model(text, boolean) is
    'Declares the embedding model of the vectors this transaction passes (p_local => false: the session); records it as the tenant''s model when none is recorded yet. Returns the tenant''s model. Vectors of another model are then refused with PM025.';

-- The re-embed functions below are SECURITY DEFINER (owner pgmem_admin,
-- which bypasses RLS): they write the tenant's settings row (read-only for
-- applications) and delete staged vectors (applications hold no DELETE, so
-- they cannot LOCK TABLE). Each takes the tenant from its invoker wrapper,
-- checks that the session may act for it (pgmem._require_session_for) and
-- names it in every statement.

create or replace function pgmem._start_reembed(p_tenant text, p_model text, p_batch integer)
returns integer
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := p_tenant;
    v_settings pgmem.settings;
    v_model text := nullif(pg_catalog.btrim(p_model), '');
    v_jobs integer;
begin
    perform pgmem._require_session_for(p_tenant);
    perform pgmem._require_unbound('pgmem.start_reembed');
    if v_model is null or pg_catalog.length(v_model) > 256 then
        raise exception 'p_model must be a model name of 1 to 256 characters'
            using errcode = 'PM028', hint = 'e.g. multilingual-e5-small-q4 or all-MiniLM-L6-v2.';
    end if;
    if p_batch is null or p_batch not between 1 and 1000 then
        raise exception 'p_batch must be between 1 and 1000, not %', coalesce(p_batch::text, 'NULL')
            using errcode = 'PM028', hint = 'Memories per worker job; 64 is the default.';
    end if;
    select s.* into v_settings from pgmem.settings as s where s.tenant_id = v_tenant for update;
    if v_settings.embedding_model is not distinct from v_model then
        raise exception 'tenant % already stores vectors of %', v_tenant, v_model
            using errcode = 'PM028', hint = 'Nothing to re-embed.';
    end if;
    if v_settings.reembed_model is not null and v_settings.reembed_model <> v_model then
        raise exception 'tenant % is being re-embedded with % already', v_tenant, v_settings.reembed_model
            using errcode = 'PM028',
                  hint = 'Let it finish (pgmem.reembed_status()), or cancel it with pgmem.cancel_reembed().';
    end if;
    if v_settings.reembed_model is not null then
        return 0;  -- the same re-embed again: its jobs are queued already
    end if;
    if not exists (select from pgmem.memories as m where m.tenant_id = v_tenant and m.embedding is not null) then
        -- Nothing stored yet: switch at once.
        update pgmem.settings as s set embedding_model = v_model, updated_at = pg_catalog.now()
        where s.tenant_id = v_tenant;
        return 0;
    end if;
    update pgmem.settings as s set reembed_model = v_model, updated_at = pg_catalog.now()
    where s.tenant_id = v_tenant;
    delete from pgmem.reembed_vectors as r where r.tenant_id = v_tenant;
    v_jobs := pgmem._queue_reembed(v_tenant, v_model, p_batch);
    return v_jobs;
end
$$;

comment on function pgmem._start_reembed(text, text, integer) is
    'pgmem.start_reembed for p_tenant (internal, owner rights).';

create or replace function pgmem.start_reembed(p_model text, p_batch integer default 64)
returns integer
language sql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select pgmem._start_reembed(pgmem._require_tenant(), p_model, p_batch)
$$;

comment on function pgmem.start_reembed(text, integer) is
    'Moves the bound tenant to embedding model p_model: queues ''embed'' inbox jobs of p_batch memories each for a worker running that model; the stored vectors and settings.embedding_model switch together when the last one is staged (pgmem.stage_reembed). Returns the jobs queued (0 when nothing is stored: switched at once). PM028 for a blank model, the current model or another running re-embed.';

create or replace function pgmem._queue_reembed(p_tenant text, p_model text, p_batch integer default 64)
returns integer
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_jobs integer;
begin
    -- Every memory with a vector (archived ones too: a restore brings them back)
    -- that has no staged vector of the current content yet.
    with todo as (
        select m.memory_id, (pg_catalog.row_number() over (order by m.memory_id) - 1) / p_batch as chunk
        from pgmem.memories as m
        where m.tenant_id = p_tenant and m.embedding is not null
          and not exists (select from pgmem.reembed_vectors as r
                          where r.tenant_id = m.tenant_id and r.memory_id = m.memory_id and r.model = p_model
                            and r.content_hash = pg_catalog.sha256(pg_catalog.convert_to(m.content, 'UTF8')))
    ), queued as (
        insert into pgmem.inbox (tenant_id, job, payload)
        select p_tenant, 'embed',
               pg_catalog.jsonb_build_object('reembed', p_model,
                                             'memory_ids', pg_catalog.jsonb_agg(t.memory_id order by t.memory_id))
        from todo as t
        group by t.chunk
        returning 1
    )
    select pg_catalog.count(*)::integer into v_jobs from queued;
    if v_jobs > 0 then
        perform pg_catalog.pg_notify('pgmem_inbox', '');
    end if;
    return v_jobs;
end
$$;

comment on function pgmem._queue_reembed(text, text, integer) is
    'Queues re-embed jobs for the memories of p_tenant that have a vector but no staged p_model vector of their current content; returns how many (internal).';

create or replace function pgmem._stage_reembed(
    p_tenant text,
    p_model text,
    p_memory_ids bigint[],
    p_embeddings real[]
)
returns text
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := p_tenant;
    v_settings pgmem.settings;
    v_count integer := coalesce(pg_catalog.cardinality(p_memory_ids), 0);
    v_dims integer;
    v_pending integer;
    v_row integer;
    v_vector real[];
begin
    perform pgmem._require_session_for(p_tenant);
    perform pgmem._require_unbound('pgmem.stage_reembed');
    -- One stage at a time per tenant: the last one sees every other one's rows.
    select s.* into v_settings from pgmem.settings as s where s.tenant_id = v_tenant for update;
    if v_settings.reembed_model is distinct from p_model then
        raise exception 'tenant % has no re-embed to % running', v_tenant, coalesce(p_model, 'NULL')
            using errcode = 'PM028', hint = 'The re-embed was cancelled or finished; this job has nothing to do.';
    end if;
    if v_count > 0 and (pg_catalog.array_ndims(p_embeddings) is distinct from 2
                        or pg_catalog.array_length(p_embeddings, 1) <> v_count) then
        raise exception 'p_embeddings must be a two-dimensional array with one row per memory id'
            using errcode = 'PM015', hint = 'Pass array[[...], [...]] in the order of p_memory_ids.';
    end if;
    v_dims := coalesce(pg_catalog.array_length(p_embeddings, 2), 0);
    -- The vectors are checked as the tenant's future model's.
    v_settings.embedding_model := p_model;
    for v_row in 1 .. v_count loop
        v_vector := array(select pg_catalog.unnest(p_embeddings[v_row:v_row][1:v_dims]));
        perform pgmem._check_embedding(v_settings, v_vector);
        insert into pgmem.reembed_vectors as r (tenant_id, memory_id, model, content_hash, embedding)
        select m.tenant_id, m.memory_id, p_model, pg_catalog.sha256(pg_catalog.convert_to(m.content, 'UTF8')),
               v_vector::public.vector
        from pgmem.memories as m
        where m.tenant_id = v_tenant and m.memory_id = p_memory_ids[v_row]
        on conflict (tenant_id, memory_id) do update
        set model = excluded.model, content_hash = excluded.content_hash, embedding = excluded.embedding,
            staged_at = pg_catalog.now();
    end loop;
    -- Other re-embed jobs still queued or running (this job's own row is pending too).
    select pg_catalog.count(*) into v_pending
    from pgmem.inbox as i
    where i.tenant_id = v_tenant and i.job = 'embed' and i.status = 'pending'
      and i.payload ->> 'reembed' = p_model;
    if v_pending > 1 then
        return 'staged';
    end if;
    -- The last job: memories written or edited since the start get jobs of their own.
    if pgmem._queue_reembed(v_tenant, p_model) > 0 then
        return 'staged';
    end if;
    update pgmem.memories as m set embedding = r.embedding
    from pgmem.reembed_vectors as r
    where m.tenant_id = v_tenant and r.tenant_id = v_tenant and r.memory_id = m.memory_id
      and m.embedding is not null;
    update pgmem.settings as s
    set embedding_model = p_model, reembed_model = null, updated_at = pg_catalog.now()
    where s.tenant_id = v_tenant;
    delete from pgmem.reembed_vectors as r where r.tenant_id = v_tenant;
    return 'switched';
end
$$;

comment on function pgmem._stage_reembed(text, text, bigint[], real[]) is
    'pgmem.stage_reembed for p_tenant (internal, owner rights).';

create or replace function pgmem.stage_reembed(p_model text, p_memory_ids bigint[], p_embeddings real[])
returns text
language sql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select pgmem._stage_reembed(pgmem._require_tenant(), p_model, p_memory_ids, p_embeddings)
$$;

comment on function pgmem.stage_reembed(text, bigint[], real[]) is
    'A re-embed job''s result: stages the p_model vectors (one row of p_embeddings per id of p_memory_ids, checked: PM015-PM017) of the bound tenant''s memories; the last job swaps every staged vector into pgmem.memories and sets settings.embedding_model = p_model in the same transaction. Returns staged or switched. PM028 when no re-embed to p_model is running.';

create or replace function pgmem._cancel_reembed(p_tenant text)
returns boolean
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := p_tenant;
    v_model text;
begin
    perform pgmem._require_session_for(p_tenant);
    perform pgmem._require_unbound('pgmem.cancel_reembed');
    select s.reembed_model into v_model from pgmem.settings as s where s.tenant_id = v_tenant for update;
    if v_model is null then
        return false;
    end if;
    update pgmem.settings as s set reembed_model = null, updated_at = pg_catalog.now()
    where s.tenant_id = v_tenant;
    delete from pgmem.reembed_vectors as r where r.tenant_id = v_tenant;
    update pgmem.inbox as i
    set status = 'done', finished_at = pg_catalog.now(),
        payload = i.payload || '{"result": {"cancelled": true}}'::jsonb
    where i.tenant_id = v_tenant and i.job = 'embed' and i.status in ('pending', 'failed')
      and i.payload ->> 'reembed' = v_model;
    return true;
end
$$;

comment on function pgmem._cancel_reembed(text) is
    'pgmem.cancel_reembed for p_tenant (internal, owner rights).';

create or replace function pgmem.cancel_reembed()
returns boolean
language sql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select pgmem._cancel_reembed(pgmem._require_tenant())
$$;

comment on function pgmem.cancel_reembed() is
    'Stops the bound tenant''s running re-embed: its queued jobs are marked done (result.cancelled), staged vectors dropped; the tenant keeps its model. False when none was running.';

create or replace function pgmem.reembed_status(
    out embedding_model text,
    out reembed_model text,
    out memories bigint,
    out staged bigint,
    out jobs_pending bigint,
    out jobs_failed bigint
)
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._require_tenant();
begin
    select s.embedding_model, s.reembed_model into embedding_model, reembed_model
    from pgmem.settings as s where s.tenant_id = v_tenant;
    select pg_catalog.count(*) into memories
    from pgmem.memories as m where m.tenant_id = v_tenant and m.embedding is not null;
    select pg_catalog.count(*) into staged from pgmem.reembed_vectors as r where r.tenant_id = v_tenant;
    select pg_catalog.count(*) filter (where i.status = 'pending'),
           pg_catalog.count(*) filter (where i.status = 'failed')
    into jobs_pending, jobs_failed
    from pgmem.inbox as i
    where i.tenant_id = v_tenant and i.job = 'embed' and i.payload ->> 'reembed' = reembed_model;
end
$$;

comment on function pgmem.reembed_status() is
    'The bound tenant''s embedding model, the model a running re-embed moves it to (NULL: none), memories with a vector, vectors staged, and the re-embed''s pending and failed jobs.';

-- What pgmem measured of each embedding model, one row a model: the
-- duplicate and merge thresholds (pgmem.model_thresholds), the relevance
-- floor (pgmem.model_relevance_floor) and the similarity base
-- (pgmem.model_similarity_base), each chosen as the comment of the function
-- that reads it says. A model is calibrated here, in one place.
create or replace function pgmem._model_calibrations()
returns table(model text, duplicate_threshold real, merge_threshold real, relevance_floor real,
              similarity_base real)
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    values ('multilingual-e5-small-q4', 0.88::real, 0.83::real, 0.81::real, 0.6::real),
           ('all-MiniLM-L6-v2', 0.63::real, 0.63::real, 0.42::real, 0::real)
$$;

comment on function pgmem._model_calibrations() is
    'Each measured embedding model''s duplicate and merge thresholds, relevance floor and similarity base, as pgmem.model_thresholds, model_relevance_floor and model_similarity_base read them (internal).';

-- How alike two statements must be to be one, per embedding model: models
-- spread similarities differently (multilingual-e5-small scores distinct
-- facts about one person 0.84-0.93, all-MiniLM-L6-v2 at most ~0.6), so a
-- threshold means nothing without its model. The values are the operating
-- points `pgmem eval pairs` chose on the dev half of the labelled pair
-- corpus (pgmem/lab/data/pairs.jsonl; docs/eval.md, "Write decisions"); a
-- model not measured keeps 0.95 / 0.85. Similarity is only half of the
-- decision: a duplicate or merge also needs one statement to say all the
-- other does (pgmem._covers), which is why MiniLM, whose scores for
-- Chinese pairs are low, can work from 0.63.
create or replace function pgmem.model_thresholds(p_model text)
returns table(duplicate_threshold real, merge_threshold real)
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- A model not measured keeps the values pgmem had before calibration.
    select coalesce(c.duplicate_threshold, 0.95)::real, coalesce(c.merge_threshold, 0.85)::real
    from (select) as one
    left join pgmem._model_calibrations() as c on c.model = p_model
$$;

comment on function pgmem.model_thresholds(text) is
    'The calibrated duplicate and merge thresholds (cosine similarity) of an embedding model, as `pgmem eval pairs` chose them on the dev half of pgmem''s labelled pair corpus; 0.95 and 0.85 for a model not measured. A tenant''s settings.duplicate_threshold / merge_threshold, when set, override them.';

-- The model of the vectors a write passes: the tenant's, else the one this
-- transaction declared (the first write of a tenant records it); vectors of
-- any other model are refused (PM025).
create or replace function pgmem._write_model(p_settings pgmem.settings)
returns text
language sql
stable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(p_settings.embedding_model, nullif(pg_catalog.current_setting('pgmem.embedding_model', true), ''))
$$;

comment on function pgmem._write_model(pgmem.settings) is
    'The embedding model of the vectors a write passes: the tenant''s settings.embedding_model, else the model this transaction declared (pgmem.use_embedding_model) (internal).';

create or replace function pgmem._write_settings(p_tenant text)
returns pgmem.settings
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_settings pgmem.settings;
    v_model record;
begin
    select s.* into v_settings from pgmem.settings as s where s.tenant_id = p_tenant;
    if v_settings.duplicate_threshold is null or v_settings.merge_threshold is null then
        select t.* into v_model from pgmem.model_thresholds(pgmem._write_model(v_settings)) as t;
        v_settings.duplicate_threshold := coalesce(v_settings.duplicate_threshold, v_model.duplicate_threshold);
        v_settings.merge_threshold := least(coalesce(v_settings.merge_threshold, v_model.merge_threshold),
                                            v_settings.duplicate_threshold);
    end if;
    return v_settings;
end
$$;

comment on function pgmem._write_settings(text) is
    'The settings row of p_tenant as the write path reads it: duplicate and merge thresholds left NULL take the values of the tenant''s embedding model (pgmem.model_thresholds) (internal).';

-- How alike a memory and a query must be for the memory to answer it, per
-- embedding model (the cosine similarity of query and passage; e5 scores
-- unrelated everyday texts 0.70-0.80, MiniLM 0.0-0.4). Each value is the
-- floor, on a 0.01 grid, of the best recall@10 on the dev half of LoCoMo's
-- dev questions (hybrid, with settings.min_text_match 0.2), the lower of
-- equals; the other half checks it (docs/eval.md, "Relevance floor"). A
-- model not measured has no floor: NULL, every candidate may answer.
create or replace function pgmem.model_relevance_floor(p_model text)
returns real
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select c.relevance_floor from pgmem._model_calibrations() as c where c.model = p_model
$$;

comment on function pgmem.model_relevance_floor(text) is
    'The calibrated relevance floor (cosine similarity of query and memory) of an embedding model, chosen on LoCoMo (docs/eval.md); NULL for a model not measured. A tenant''s settings.min_similarity, when set, overrides it.';

-- Where an embedding model puts unrelated text, as recall's relevance counts
-- a similarity from it (pgmem._similarity_above_base). Measured on LoCoMo's
-- dev questions, each against the turns of another conversation: e5 gives
-- them 0.74 on average (the Chinese set 0.82), MiniLM 0.10. The value is the
-- one, of the bases tried up to that average, with the best sum of hybrid
-- and ripple recall@5 on the first half of each conversation's questions;
-- the second half and the Chinese set check it (docs/eval.md, "Similarity
-- base"). A model not measured: NULL, raw similarity.
create or replace function pgmem.model_similarity_base(p_model text)
returns real
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select c.similarity_base from pgmem._model_calibrations() as c where c.model = p_model
$$;

comment on function pgmem.model_similarity_base(text) is
    'The cosine similarity an embedding model gives unrelated text, as recall''s relevance measures similarity from it (chosen on LoCoMo, docs/eval.md); NULL for a model not measured. A tenant''s settings.similarity_base, when set, overrides it.';

-- Citus: distributing pgmem by tenant over a cluster (docs/scaling.md).
--
-- On one server these functions refuse with PM090, but for two the rest of
-- pgmem asks: pgmem._distributed (false there) and
-- pgmem._plan_per_call_on_citus (nothing to do there). References to
-- Citus' catalog and functions sit in PL/pgSQL bodies, which PostgreSQL
-- resolves only when they run, so this file installs on a server without
-- Citus.
--
-- Layout: the tenant tables are hash-distributed by tenant_id and colocated
-- with pgmem.subjects, so every row of one tenant lives in one shard group
-- on one node and every tenant-scoped statement is routed to that node. The
-- small global tables every node reads (tenants, settings with its _default
-- row, _tenant_logins for the login binding) are reference tables, copied to
-- every node. pgmem.job_runs stays a plain table on the coordinator, where
-- pg_cron runs the jobs.

create or replace function pgmem._require_citus()
returns void
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    if not exists (select from pg_catalog.pg_extension as e where e.extname = 'citus') then
        raise exception 'the citus extension is not installed in database %', pg_catalog.current_database()
            using errcode = 'PM090',
                  hint = 'Run pgmem on a Citus coordinator (`pgmem db start --citus 2` builds a local one; '
                         '`make citus` installs Citus).';
    end if;
end
$$;

comment on function pgmem._require_citus() is
    'Error PM090 unless the citus extension is installed in this database (internal).';

-- pgmem._recall and pgmem._neighbours keep one generic plan per session for
-- their statements (their SET clauses force it). Citus plans a distributed
-- statement only with its parameters' values ("could not create distributed
-- plan"), so there they plan per call as before. The settings change as SET
-- LOCAL does; in a function whose SET clause names them, that ends with the
-- call.
create or replace function pgmem._plan_per_call_on_citus()
returns void
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    if pgmem._distributed() then
        perform pg_catalog.set_config('plan_cache_mode', 'auto', true),
                pg_catalog.set_config('enable_seqscan', 'on', true);
    end if;
end
$$;

comment on function pgmem._plan_per_call_on_citus() is
    'With pgmem distributed by Citus (pgmem._distributed()), plan_cache_mode = auto and enable_seqscan = on until the calling function returns (internal: for functions whose SET clause forces generic plans, see pgmem._recall).';

create or replace function pgmem.distribute()
returns table (table_name text, distribution text, colocation_id integer, shards bigint)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_table text;
    v_fks jsonb;
    v_fk jsonb;
    v_views jsonb;
    v_view jsonb;
    v_grant jsonb;
    v_failed text[];
begin
    perform pgmem._require_citus();
    -- Foreign keys to reference tables added after a parallel shard operation
    -- in the same transaction are refused; one connection per node avoids it.
    perform pg_catalog.set_config('citus.multi_shard_modify_mode', 'sequential', true);
    -- Functions distributed by an earlier run are re-created on the workers
    -- from the coordinator's definitions: migrations run with DDL propagation
    -- off (docs/scaling.md). First, before this transaction distributes more:
    -- run_command_on_workers uses connections of its own.
    select coalesce(pg_catalog.array_agg(r.nodename || ':' || r.nodeport || ' ' || r.result), '{}')
    into v_failed
    from pg_catalog.pg_dist_object as o
    join pg_catalog.pg_proc as f on f.oid = o.objid
    cross join lateral pg_catalog.run_command_on_workers(
        'set citus.enable_ddl_propagation = off; ' || pg_catalog.pg_get_functiondef(f.oid)
        || '; reset citus.enable_ddl_propagation') as r
    where o.classid = 'pg_catalog.pg_proc'::regclass
      and f.pronamespace = 'pgmem'::regnamespace
      and not r.success;
    if pg_catalog.cardinality(v_failed) > 0 then
        raise exception 'could not update pgmem functions on the workers: %', v_failed[1]
            using errcode = 'PM091', hint = 'Check that every worker runs and has the vector extension.';
    end if;
    -- End-user binding is for a single node (92_subject_binding.sql): its
    -- policy checks hold subqueries, and would run on the workers, which do
    -- not see this backend. The tenant check alone stays. After the workers
    -- are updated: altering a policy locks its table.
    if pgmem._subject_binding_enabled() then
        perform pgmem._subject_binding_policies(false);
    end if;
    -- Citus moves and splits shards (pgmem.move_tenant, rebalancing) over
    -- connections as the tables' owner, so pgmem_admin must be able to log in
    -- between nodes. It has no password: over TCP it still cannot log in
    -- unless the operator gives it one (docs/scaling.md).
    if not (select r.rolcanlogin from pg_catalog.pg_roles as r where r.rolname = 'pgmem_admin') then
        execute 'alter role pgmem_admin login';
    end if;
    -- The views go while the tables are distributed and come back as they
    -- were (definition, options, owner, comment, grants): Citus walks the
    -- dependencies of a table it distributes, and pgmem._decay_policy (settings
    -- read through pgmem._half_lives(settings), a function of the table's own
    -- row type) makes it report settings as depending on itself.
    select coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'name', c.oid::regclass::text, 'definition', pg_catalog.pg_get_viewdef(c.oid),
               'options', coalesce(pg_catalog.array_to_string(c.reloptions, ', '), ''),
               'owner', pg_catalog.pg_get_userbyid(c.relowner),
               'comment', pg_catalog.obj_description(c.oid, 'pg_class'),
               'grants', (select coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                                  'privilege', a.privilege_type,
                                  'grantee', case when a.grantee = 0 then 'public'
                                                  else pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) end)), '[]')
                          from pg_catalog.aclexplode(c.relacl) as a
                          where a.grantee <> c.relowner))
               -- Views on other pgmem views come back after them.
               order by exists (select from pg_catalog.pg_rewrite as r
                                join pg_catalog.pg_depend as d
                                    on d.classid = 'pg_catalog.pg_rewrite'::regclass and d.objid = r.oid
                                join pg_catalog.pg_class as v on v.oid = d.refobjid
                                where r.ev_class = c.oid and v.oid <> c.oid and v.relkind = 'v'
                                  and v.relnamespace = 'pgmem'::regnamespace),
                        c.oid), '[]')
    into v_views
    from pg_catalog.pg_class as c
    where c.relnamespace = 'pgmem'::regnamespace and c.relkind = 'v';
    for v_view in select * from pg_catalog.jsonb_array_elements(v_views) order by 1 desc loop
        execute pg_catalog.format('drop view if exists %s cascade', v_view ->> 'name');
    end loop;
    -- Citus distributes a table only when its foreign keys point at tables of
    -- the right kind already, and the pgmem keys form a chain (tenants <-
    -- subjects <- memories <- memory_links ...). So the keys between pgmem
    -- tables are dropped, the tables distributed, and the same keys (names and
    -- definitions from the catalog) created again; all in this transaction.
    select coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'table', con.conrelid::regclass::text, 'name', con.conname,
               'definition', pg_catalog.pg_get_constraintdef(con.oid))), '[]')
    into v_fks
    from pg_catalog.pg_constraint as con
    where con.contype = 'f'
      and con.connamespace = 'pgmem'::regnamespace
      and not exists (select from pg_catalog.pg_dist_partition as p
                      where p.logicalrelid = con.conrelid and (p.partmethod = 'h' or p.repmodel = 't'));
    for v_fk in select * from pg_catalog.jsonb_array_elements(v_fks) loop
        execute pg_catalog.format('alter table %s drop constraint %I', v_fk ->> 'table', v_fk ->> 'name');
    end loop;
    -- Reference tables first: the distributed tables' foreign keys point at tenants.
    foreach v_table in array array['tenants', '_tenant_logins', 'settings'] loop
        -- A table linked by a foreign key to a reference table became a Citus
        -- local table on the way (partmethod 'n', repmodel 's'): not done yet.
        if not exists (select from pg_catalog.pg_dist_partition as p
                       where p.logicalrelid = pg_catalog.format('pgmem.%I', v_table)::regclass
                         and p.repmodel = 't') then
            perform pg_catalog.create_reference_table(pg_catalog.format('pgmem.%I', v_table));
            perform pg_catalog.truncate_local_data_after_distributing_table(pg_catalog.format('pgmem.%I', v_table));
        end if;
    end loop;
    -- subjects first: the others are colocated with it (and reference it).
    foreach v_table in array array['subjects', 'memories', 'memory_links', 'memory_events', 'inbox',
                                     'sessions', 'session_messages', 'session_summaries', 'tasks', 'task_steps',
                                     'reembed_vectors', 'memory_decay', 'memory_accesses'] loop
        if not exists (select from pg_catalog.pg_dist_partition as p
                       where p.logicalrelid = pg_catalog.format('pgmem.%I', v_table)::regclass
                         and p.partmethod = 'h') then
            perform pg_catalog.create_distributed_table(
                pg_catalog.format('pgmem.%I', v_table), 'tenant_id',
                colocate_with => case when v_table = 'subjects' then 'default' else 'pgmem.subjects' end);
            perform pg_catalog.truncate_local_data_after_distributing_table(pg_catalog.format('pgmem.%I', v_table));
        end if;
    end loop;
    for v_view in select * from pg_catalog.jsonb_array_elements(v_views) loop
        execute pg_catalog.format('create view %s %s as %s', v_view ->> 'name',
                                  case when v_view ->> 'options' <> '' then
                                       pg_catalog.format('with (%s)', v_view ->> 'options') else '' end,
                                  v_view ->> 'definition');
        execute pg_catalog.format('alter view %s owner to %I', v_view ->> 'name', v_view ->> 'owner');
        execute pg_catalog.format('comment on view %s is %L', v_view ->> 'name', v_view ->> 'comment');
        for v_grant in select * from pg_catalog.jsonb_array_elements(v_view -> 'grants') loop
            execute pg_catalog.format('grant %s on %s to %s', v_grant ->> 'privilege', v_view ->> 'name',
                                      v_grant ->> 'grantee');
        end loop;
    end loop;
    for v_fk in select * from pg_catalog.jsonb_array_elements(v_fks) loop
        execute pg_catalog.format('alter table %s add constraint %I %s',
                                  v_fk ->> 'table', v_fk ->> 'name', v_fk ->> 'definition');
    end loop;
    -- Every pgmem function exists on every node: policies, triggers, defaults
    -- and generated columns call them on the shards. A new one is distributed
    -- (definition, owner and grants) by Citus, in no particular order, so the
    -- workers must not check bodies against functions still to come (a SET
    -- LOCAL statement reaches them, set_config() does not).
    execute 'set local check_function_bodies = off';
    -- Except those returning rows of a coordinator-only table or view (the job
    -- runner's pgmem.job_runs): they run where pg_cron runs.
    perform pg_catalog.create_distributed_function(f.oid::regprocedure)
    from pg_catalog.pg_proc as f
    where f.pronamespace = 'pgmem'::regnamespace
      and not exists (select from pg_catalog.pg_type as t
                      join pg_catalog.pg_class as c on c.oid = t.typrelid
                      where t.oid = f.prorettype
                        and not exists (select from pg_catalog.pg_dist_partition as p
                                        where p.logicalrelid = c.oid))
      and not exists (select from pg_catalog.pg_dist_object as o
                      where o.classid = 'pg_catalog.pg_proc'::regclass and o.objid = f.oid);
    return query
    select c.relname::text,
           case when p.partmethod = 'h' then 'distributed by tenant_id'
                when p.repmodel = 't' then 'reference' else 'coordinator-local' end,
           p.colocationid,
           (select pg_catalog.count(*) from pg_catalog.pg_dist_shard as s where s.logicalrelid = p.logicalrelid)
    from pg_catalog.pg_dist_partition as p
    join pg_catalog.pg_class as c on c.oid = p.logicalrelid
    where c.relnamespace = 'pgmem'::regnamespace
    order by p.partmethod, c.relname;
end
$$;

comment on function pgmem.distribute() is
    'On a Citus coordinator: makes tenants, settings and _tenant_logins reference tables and distributes '
    'the tenant tables by tenant_id, colocated (idempotent; `pgmem migrate` calls it). Superuser only. PM090 without Citus.';

create or replace function pgmem.node_distribution()
returns table (node text, node_port integer, tenants bigint, shards bigint, memories bigint, bytes bigint)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    perform pgmem._require_citus();
    -- Tenants per node: each tenant_id hashes to one shard of the colocation
    -- group; memories and bytes: counted and sized on each shard where it lives.
    return query
    with shards as (
        select cs.shardid, cs.nodename, cs.nodeport, cs.shard_size
        from pg_catalog.citus_shards as cs
        where cs.table_name = 'pgmem.memories'::regclass
    ), shard_rows as (
        select r.shardid, r.result::bigint as row_count
        from pg_catalog.run_command_on_shards('pgmem.memories', 'select count(*) from %s') as r
        where r.success
    ), shard_tenants as (
        select pg_catalog.get_shard_id_for_distribution_column('pgmem.memories', t.tenant_id) as shardid,
               pg_catalog.count(*) as tenant_count
        from pgmem.tenants as t
        group by 1
    )
    select n.nodename::text, n.nodeport, coalesce(pg_catalog.sum(t.tenant_count), 0)::bigint,
           pg_catalog.count(*), coalesce(pg_catalog.sum(r.row_count), 0)::bigint,
           coalesce(pg_catalog.sum(n.shard_size), 0)::bigint
    from shards as n
    left join shard_rows as r on r.shardid = n.shardid
    left join shard_tenants as t on t.shardid = n.shardid
    group by n.nodename, n.nodeport
    order by n.nodeport;
end
$$;

comment on function pgmem.node_distribution() is
    'On a Citus coordinator: per node, how many tenants, shards of pgmem.memories, memories and bytes it holds '
    '(`pgmem stats --nodes`). pgmem_admin/readonly: needs to read every tenant. PM090 without Citus.';

create or replace function pgmem._distributed()
returns boolean
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- pg_dist_partition exists only with Citus: asked only when it is there
    -- (a separate statement, which PL/pgSQL parses only when it runs).
    if not exists (select from pg_catalog.pg_extension as e where e.extname = 'citus') then
        return false;
    end if;
    return exists (select from pg_catalog.pg_dist_partition as p where p.logicalrelid = 'pgmem.memories'::regclass);
end
$$;

comment on function pgmem._distributed() is
    'True when pgmem.memories is a Citus distributed table (internal: the write path takes its Citus-safe way then).';

create or replace function pgmem.move_tenant(p_tenant text, p_node_name text, p_node_port integer)
returns table (shard_id bigint, from_node text, to_node text, moved boolean)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_shard bigint;
    v_from record;
begin
    perform pgmem._require_citus();
    if not exists (select from pgmem.tenants as t where t.tenant_id = p_tenant) then
        raise exception 'unknown pgmem tenant: %', coalesce(p_tenant, 'NULL')
            using errcode = 'PM002', hint = 'pgmem tenant list shows the tenants.';
    end if;
    if not exists (select from pg_catalog.pg_dist_node as n
                   where n.nodename = p_node_name and n.nodeport = p_node_port and n.isactive
                     and n.shouldhaveshards) then
        raise exception 'no active Citus worker %:%', p_node_name, p_node_port
            using errcode = 'PM092', hint = 'select nodename, nodeport from pg_dist_node lists the nodes.';
    end if;
    -- A shard group of its own first, so that the move carries this tenant
    -- and no other (isolate_tenant_to_new_shard splits every colocated table).
    v_shard := pg_catalog.get_shard_id_for_distribution_column('pgmem.subjects', p_tenant);
    if (select s.shardminvalue <> s.shardmaxvalue from pg_catalog.pg_dist_shard as s where s.shardid = v_shard) then
        v_shard := pg_catalog.isolate_tenant_to_new_shard('pgmem.subjects', p_tenant, 'CASCADE',
                                                          shard_transfer_mode => 'block_writes');
    end if;
    select p.nodename, p.nodeport into v_from
    from pg_catalog.pg_dist_shard_placement as p where p.shardid = v_shard;
    if (v_from.nodename, v_from.nodeport) is distinct from (p_node_name, p_node_port) then
        perform pg_catalog.citus_move_shard_placement(v_shard, v_from.nodename, v_from.nodeport,
                                                      p_node_name, p_node_port,
                                                      shard_transfer_mode => 'block_writes');
    end if;
    return query select v_shard, v_from.nodename || ':' || v_from.nodeport, p_node_name || ':' || p_node_port,
                        (v_from.nodename, v_from.nodeport) is distinct from (p_node_name, p_node_port);
end
$$;

comment on function pgmem.move_tenant(text, text, integer) is
    'On a Citus coordinator: gives a (hot) tenant a shard group of its own and moves it to worker p_node_name:p_node_port '
    '(writes to that tenant wait during the copy). Superuser only; PM090 without Citus, PM092 for an unknown worker.';

"""Every statement of the Citus support (:mod:`pgmem.citus`, :mod:`pgmem.lab.citus_bench`,
`pgmem db nodes`, `pgmem tenant move`), by name."""

from __future__ import annotations

from typing import Final

# -- the local cluster and the migration (pgmem.citus) --------------------------

PRELOADED: Final = "select current_setting('shared_preload_libraries')"
CREATE_CITUS: Final = "create extension if not exists citus"
SET_COORDINATOR: Final = "select pg_catalog.citus_set_coordinator_host(%s, %s)"
NODE_REGISTERED: Final = (
    "select 1 from pg_catalog.pg_dist_node where nodename = %s and nodeport = %s"
)
ADD_NODE: Final = "select pg_catalog.citus_add_node(%s, %s)"
HAS_CITUS: Final = "select exists (select from pg_extension where extname = 'citus')"
DISTRIBUTE: Final = "select * from pgmem.distribute()"

# -- the CLI ----------------------------------------------------------------------

NODE_DISTRIBUTION: Final = "select * from pgmem.node_distribution()"
MOVE_TENANT: Final = "select * from pgmem.move_tenant(%s, %s, %s)"

# -- pgmem bench --citus (pgmem.lab.citus_bench) ----------------------------------------

BENCH_CREATE_TENANTS: Final = (
    "select pgmem.create_tenant(format('cb%%s', lpad(i::text, 5, '0')))"
    " from generate_series(1, %s) as i"
)
BENCH_LOAD_SUBJECTS: Final = """
insert into pgmem.subjects (tenant_id, subject)
select t.tenant_id, 'user' || s
from pgmem.tenants as t cross join generate_series(1, %(subjects)s) as s
where t.tenant_id like 'cb%%'
"""
BENCH_LOAD_MEMORIES: Final = """
insert into pgmem.memories (tenant_id, subject, kind, content, embedding, importance)
select t.tenant_id, 'user' || (1 + i %% %(subjects)s), 'semantic',
       format('%%s likes %%s and %%s (note %%s)', 'user' || (1 + i %% %(subjects)s),
              (%(words)s::text[])[1 + (i * 7 + n) %% %(nwords)s],
              (%(words)s::text[])[1 + (i * 13 + n * 3) %% %(nwords)s], i),
       -- i > -n ties the subquery to the row: one fresh vector per memory
       (select array_agg(random() - 0.5) from generate_series(1, %(dims)s)
        where i > -n)::public.vector,
       0.5
from (select tenant_id, row_number() over (order by tenant_id) as n
      from pgmem.tenants where tenant_id like 'cb%%') as t
cross join generate_series(1, %(per_tenant)s) as i
"""
BENCH_ANALYZE: Final = "analyze pgmem.memories"
# Templates for psycopg.sql.SQL(...).format(...): {} is an identifier or literal.
# {} is citus_total_relation_size (distributed) or pg_total_relation_size.
BENCH_BYTES_PER_MEMORY: Final = (
    "select {}('pgmem.memories'::regclass)::float8"
    " / nullif((select count(*) from pgmem.memories), 0)"
)
BENCH_CREATE_SERVICE: Final = "create role {} login password {} in role pgmem_service"
BENCH_DROP_ROLE: Final = "drop role {}"
BENCH_SET_TENANT: Final = "select pgmem.set_tenant(%s)"
BENCH_RECALL: Final = "select count(*) from pgmem.recall(%s, %s, %s::public.vector, p_k => 10)"
BENCH_COUNT: Final = (
    "select count(*), count(distinct tenant_id) from pgmem.memories where tenant_id like 'cb%'"
)
BENCH_PER_TENANT: Final = (
    "select min(c), max(c) from (select count(*) as c from pgmem.memories"
    " where tenant_id like 'cb%' group by tenant_id) as x"
)
BENCH_VISIBLE: Final = (
    "select count(*), count(*) filter (where tenant_id <> %s) from pgmem.memories"
)
BENCH_WORKERS: Final = "select count(*) from pg_dist_node where groupid <> 0 and isactive"
BENCH_EXISTING: Final = "select count(*) from pgmem.tenants where tenant_id like 'cb%'"
BENCH_EXPLAIN: Final = (
    "explain (costs off) select memory_id, content from pgmem.memories"
    " where tenant_id = {} and subject = 'user1' and status = 'active'"
)
BENCH_TENANT_NODE: Final = (
    "select nodename || ':' || nodeport from citus_shards"
    " where shardid = get_shard_id_for_distribution_column('pgmem.memories', %s::text)"
)
# Foreign keys cascade from tenants to every distributed table.
BENCH_REMOVE_TENANTS: Final = "delete from pgmem.tenants where tenant_id like 'cb%'"
BENCH_REMOVE_SETTINGS: Final = "delete from pgmem.settings where tenant_id like 'cb%'"

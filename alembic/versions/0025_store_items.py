"""Store items: one key, one memory, the value exactly as put.

The LangGraph store kept its items in ordinary memories, the key and value in
metadata: items with equal contents shared one memory (the unique
active-content index allowed no second), similar ones were merged, and the
values were redacted with the metadata. An item is now a memory of its own,
source 'store', with three columns of its own:

- memories.item_key: the key within its subject (the store's namespace). The
  row's content_hash is the key's hash (pgmem._item_hash), so the unique
  index memories_active_content holds one active item per key, and no
  item's content ever meets another memory's as a duplicate.
- memories.item_value: the value, exactly as put (jsonb object); its
  searchable text, the content, is redacted and checked as any memory's.
- memories.item_ttl: the item's time to live (expires_at is refreshed to
  now + item_ttl when it is read with refresh).

Items already stored (metadata langgraph_keys / langgraph_values, keys sealed
by revision 0021) become one item per key; the memory that held them is
forgotten (status deleted, with its event), its text living on in the items.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-04
"""

from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

SOURCES = "'rule', 'llm', 'manual', 'sql', 'import', 'turn'"
GUARDED = "embedding, content, session_id, agent_id, triple_subject, triple_predicate, triple_object, metadata"
TEXT = "content, content_hash, fts, conflict_terms, conflict_marks"
# The guard also sees the item columns (an app role may not re-key a row or turn
# one into an item), and the text trigger the key, whose hash content_hash is.
TRIGGERS = """
drop trigger memories_guard on pgmem.memories;
create trigger memories_guard before insert or update of {guarded} on pgmem.memories
    for each row execute function pgmem._memories_guard();
drop trigger memories_text on pgmem.memories;
create trigger memories_text before insert or update of {text} on pgmem.memories
    for each row execute function pgmem._memories_text();
"""

UNSEAL = (
    "pg_catalog.convert_from(pg_catalog.decode(pg_catalog.translate(pg_catalog.substr({k}, 3),"
    " 'abcdefghijklmnop', '0123456789abcdef'), 'hex'), 'UTF8')"
)

# The key's hash, as pgmem._item_hash (sql/functions/00_text.sql) computes it.
ITEM_HASH = (
    "'key:' || pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to({k}, 'UTF8')), 'hex')"
)

# Run only when there are items to convert: it calls functions (pgmem.redact,
# pgmem._tsv) that a database being created has not got yet at this point.
CONVERT = f"""
do $do$
begin
if not exists (select from pgmem.memories where metadata ? 'langgraph_keys') then
    return;
end if;
execute $convert$
create temporary table _pgmem_old_items on commit drop as
-- Each item's own text: the value's content string (redacted, as it is stored),
-- else the memory's.
select m.tenant_id, m.memory_id, m.subject,
       coalesce(pgmem.redact(nullif(pg_catalog.btrim(
                    m.metadata -> 'langgraph_values' -> k.sealed ->> 'content'), '')),
                m.content) as content,
       m.embedding, m.importance, m.created_at, m.updated_at,
       m.ann, k.sealed, {UNSEAL.format(k="k.sealed")} as item_key,
       coalesce(m.metadata -> 'langgraph_values' -> k.sealed, '{{}}') as item_value,
       m.metadata - 'langgraph_keys' - 'langgraph_values' as metadata
from pgmem.memories as m
cross join lateral pg_catalog.jsonb_array_elements_text(m.metadata -> 'langgraph_keys') as k (sealed)
where m.status in ('active', 'merged') and pg_catalog.jsonb_typeof(m.metadata -> 'langgraph_keys') = 'array';

insert into pgmem.memory_events (tenant_id, memory_id, subject, event, details, actor)
select distinct o.tenant_id, o.memory_id, o.subject, 'delete',
       pg_catalog.jsonb_build_object('reason', 'became store items'), current_user
from _pgmem_old_items as o;
update pgmem.memories as m
set status = 'deleted', status_changed_at = pg_catalog.now(), updated_at = pg_catalog.now()
where (m.tenant_id, m.memory_id) in (select o.tenant_id, o.memory_id from _pgmem_old_items as o);

-- Written with the hash of the key, which the memories_text trigger of this
-- revision's predecessors would replace by the content's.
alter table pgmem.memories disable trigger memories_text;
with items as (
    insert into pgmem.memories as m (tenant_id, subject, kind, content, content_hash, fts, embedding, importance,
                                     source, metadata, item_key, item_value, kept, created_at, updated_at, ann)
    select distinct on (o.tenant_id, o.subject, o.item_key)
           o.tenant_id, o.subject, 'semantic',
           o.content, {ITEM_HASH.format(k="o.item_key")}, pgmem._tsv(o.content),
           o.embedding, o.importance, 'store',
           o.metadata || '{{"item": true}}', o.item_key, o.item_value, true, o.created_at, o.updated_at, o.ann
    from _pgmem_old_items as o
    order by o.tenant_id, o.subject, o.item_key, o.updated_at desc
    returning m.tenant_id, m.memory_id, m.subject, m.item_key
)
insert into pgmem.memory_events (tenant_id, memory_id, subject, event, details, actor)
select i.tenant_id, i.memory_id, i.subject, 'insert', pg_catalog.jsonb_build_object('key', i.item_key), current_user
from items as i;
alter table pgmem.memories enable trigger memories_text;
$convert$;
end
$do$;
"""


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        f"""
        alter table pgmem.memories
            add column item_key text,
            add column item_value jsonb,
            add column item_ttl interval,
            drop constraint memories_source_check,
            add constraint memories_source_check check (source = any (array[{SOURCES}, 'store'])),
            add constraint memories_item check (
                (item_key is not null) = (source = 'store')
                and (item_value is not null) = (source = 'store')
                and (item_value is null or pg_catalog.jsonb_typeof(item_value) = 'object')
                and (item_ttl is null or (item_key is not null and item_ttl > interval '0')));
        comment on column pgmem.memories.item_key is
            'A store item''s key within its subject (source store; pgmem.put_items). content_hash is its hash (pgmem._item_hash): one active item per key.';
        comment on column pgmem.memories.item_value is
            'A store item''s value, exactly as put (a JSON object); the content is its searchable text, redacted and checked as any memory''s.';
        comment on column pgmem.memories.item_ttl is
            'A store item''s time to live: expires_at is now + item_ttl at each put, and at each read with refresh.';
        """
    )
    op.execute(CONVERT)
    op.execute(
        TRIGGERS.format(
            guarded=GUARDED + ", source, item_key, item_value, item_ttl", text=TEXT + ", item_key"
        )
    )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        f"""
        delete from pgmem.memories where source = 'store';
        {TRIGGERS.format(guarded=GUARDED, text=TEXT)}
        alter table pgmem.memories
            drop constraint memories_item,
            drop constraint memories_source_check,
            add constraint memories_source_check check (source = any (array[{SOURCES}])),
            drop column item_ttl,
            drop column item_value,
            drop column item_key;
        """
    )
    op.execute("reset role")

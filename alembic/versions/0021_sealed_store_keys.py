"""LangGraph store keys sealed where redaction cannot reach them.

PgmemStore kept each item's key in its memory's metadata as written, and the
memories guard redacts metadata strings: keys that looked like personal data
were stored as "[REDACTED:email]", two of them collided and neither could be
read back. Keys are now stored sealed ("k:" and the UTF-8 bytes as letters
a-p, pgmem.integrations.langgraph.seal); this converts the keys stored
before, in langgraph_keys and as the keys of langgraph_values. A key that was
redacted already cannot be recovered: it is sealed as it reads.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-03
"""

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

SEAL = (
    "'k:' || pg_catalog.translate(pg_catalog.encode(pg_catalog.convert_to({k}, 'UTF8'), 'hex'),"
    " '0123456789abcdef', 'abcdefghijklmnop')"
)
UNSEAL = (
    "pg_catalog.convert_from(pg_catalog.decode(pg_catalog.translate(pg_catalog.substr({k}, 3),"
    " 'abcdefghijklmnop', '0123456789abcdef'), 'hex'), 'UTF8')"
)

CONVERT = """
update pgmem.memories as m
set metadata = m.metadata
    || pg_catalog.jsonb_build_object(
           'langgraph_keys',
           (select coalesce(pg_catalog.jsonb_agg({seal} order by k.i), '[]')
            from pg_catalog.jsonb_array_elements_text(m.metadata -> 'langgraph_keys')
                 with ordinality as k (k, i)))
    || case when pg_catalog.jsonb_typeof(m.metadata -> 'langgraph_values') = 'object' then
           pg_catalog.jsonb_build_object(
               'langgraph_values',
               (select coalesce(pg_catalog.jsonb_object_agg({seal_value}, v.value), '{{}}')
                from pg_catalog.jsonb_each(m.metadata -> 'langgraph_values') as v))
       else '{{}}' end
where pg_catalog.jsonb_typeof(m.metadata -> 'langgraph_keys') = 'array'
"""


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(CONVERT.format(seal=SEAL.format(k="k.k"), seal_value=SEAL.format(k="v.key")))
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(CONVERT.format(seal=UNSEAL.format(k="k.k"), seal_value=UNSEAL.format(k="v.key")))
    op.execute("reset role")

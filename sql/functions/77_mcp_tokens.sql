-- Bearer tokens of `pgmem mcp` over HTTP (table pgmem._mcp_tokens, owner
-- only). A token is 'pgmem_' and 64 random hex digits, shown once; only its
-- sha256 is stored. It acts for one tenant, and when made for a subject, for
-- that subject's memories only.

create or replace function pgmem._token_hash(p_token text)
returns text
language sql
immutable strict parallel safe
security invoker
as $$
    select pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(p_token, 'UTF8')), 'hex')
$$;

comment on function pgmem._token_hash(text) is
    'The sha256 (hex) pgmem._mcp_tokens keys a bearer token by (internal).';

create or replace function pgmem.create_mcp_token(p_tenant text, p_label text, p_subject text default null)
returns text
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    -- gen_random_uuid draws from the strong random source: two give 244 bits.
    v_token text := 'pgmem_' || pg_catalog.replace(pg_catalog.gen_random_uuid()::text, '-', '')
                             || pg_catalog.replace(pg_catalog.gen_random_uuid()::text, '-', '');
begin
    if not exists (select from pgmem.tenants as t where t.tenant_id = p_tenant) then
        raise exception 'unknown pgmem tenant: %', coalesce(p_tenant, 'NULL')
            using errcode = 'PM002', hint = 'pgmem tenant list shows the tenants.';
    end if;
    if p_label is null or pg_catalog.btrim(p_label) = '' or pg_catalog.length(p_label) > 128 then
        raise exception 'p_label must be 1 to 128 characters, not blank'
            using errcode = 'PM006', hint = 'Name the client the token is for, e.g. ''claude-desktop''.';
    end if;
    if p_subject is not null and (pg_catalog.btrim(p_subject) = '' or pg_catalog.length(p_subject) > 256) then
        raise exception 'p_subject must be 1 to 256 characters, not blank, or NULL for every subject'
            using errcode = 'PM006', hint = 'A token for one end user confines its calls to that user.';
    end if;
    begin
        insert into pgmem._mcp_tokens (token_hash, tenant_id, subject, label)
        values (pgmem._token_hash(v_token), p_tenant, p_subject, p_label);
    exception when unique_violation then
        raise exception 'tenant % has a token labelled % already', p_tenant, pg_catalog.quote_literal(p_label)
            using errcode = 'PM006', hint = 'Revoke it first (pgmem.revoke_mcp_token), or choose another label.';
    end;
    return v_token;
end
$$;

comment on function pgmem.create_mcp_token(text, text, text) is
    'Makes a bearer token for pgmem mcp over HTTP, acting for p_tenant (and only for p_subject''s memories when given), labelled p_label; returns the token, which is stored only as its sha256: shown once. Administrators only. PM002, PM006.';

create or replace function pgmem.revoke_mcp_token(p_tenant text, p_label text)
returns boolean
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    delete from pgmem._mcp_tokens as k where k.tenant_id = p_tenant and k.label = p_label;
    return found;
end
$$;

comment on function pgmem.revoke_mcp_token(text, text) is
    'Revokes the tenant''s bearer token labelled p_label at once (a server checks every request); false if there was none. Administrators only.';

create or replace function pgmem.mcp_tokens(p_tenant text default null)
returns table(tenant_id text, label text, subject text, created_at timestamptz)
language sql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select k.tenant_id, k.label, k.subject, k.created_at
    from pgmem._mcp_tokens as k
    where p_tenant is null or k.tenant_id = p_tenant
    order by k.tenant_id, k.label
$$;

comment on function pgmem.mcp_tokens(text) is
    'The bearer tokens (never their values): tenant, label, subject, when made. Administrators only.';

create or replace function pgmem.mcp_token(p_token text)
returns table(tenant_id text, subject text, label text)
language plpgsql
stable
-- security definer: the tokens are the owner's; a server learns of a token
-- only the tenant it acts for, so no tenant can test another's tokens.
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return query
    select k.tenant_id, k.subject, k.label
    from pgmem._mcp_tokens as k
    where k.token_hash = pgmem._token_hash(p_token) and pgmem._session_may_act_for(k.tenant_id);
end
$$;

comment on function pgmem.mcp_token(text) is
    'What a bearer token of pgmem mcp acts for: its tenant, subject (NULL: every one) and label; no row for an unknown or revoked token, or one of a tenant this session may not act for.';

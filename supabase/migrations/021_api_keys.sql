-- 021: personal API keys (issue 28, item 3). External clients (an OpenAI-compatible chat client, an MCP
-- client, a script) cannot refresh an hourly Supabase access token; a key a signed-in user creates
-- acts as that user - the same role (authenticated) and auth.uid(), so row-level security decides what
-- it sees exactly as for the user's own session.
--
-- * Only the sha256 of a key is stored. A key is "pgr_" + 43 url-safe characters (256 random bits), so
--   the hash needs no salt or slow KDF: nothing short of the key itself finds a row. `prefix` (the first
--   12 characters) is what lists show, to tell keys apart.
-- * Users read, create and delete their own keys (RLS on owner_id). key_hash is not granted to them:
--   not even a key's owner reads it back, and no other role sees that a key exists.
-- * api_key_owner(hash) is how a request's key becomes a user: SECURITY DEFINER, executable by the
--   backend's own role only. It refuses expired keys and records last_used_at at most once a minute
--   (a request does not write a row every time). Revoking is deleting the row: the next request with
--   the key is refused (no cache stands between them).

set search_path = public, extensions;

create table if not exists public.api_keys (
    id uuid primary key default gen_random_uuid(),
    owner_id uuid not null default auth.uid(),
    name text not null,
    prefix text not null,
    key_hash bytea not null,
    created_at timestamptz not null default now(),
    expires_at timestamptz,
    last_used_at timestamptz,
    constraint api_keys_key_hash_key unique (key_hash),
    constraint api_keys_name_check check (char_length(name) between 1 and 100),
    constraint api_keys_key_hash_length check (octet_length(key_hash) = 32),
    constraint api_keys_expires_after_creation check (expires_at is null or expires_at > created_at)
);
alter table public.api_keys enable row level security;

comment on table public.api_keys is
    'Personal API keys: each acts as its owner (role authenticated, auth.uid() = owner_id). Only the '
    'sha256 of a key is kept; revoking deletes the row.';
comment on column public.api_keys.prefix is 'The first 12 characters of the key, shown in lists.';
comment on column public.api_keys.key_hash is 'sha256 of the whole key; readable by the backend only.';

create index if not exists api_keys_owner_id_idx on public.api_keys (owner_id, created_at desc);

drop policy if exists "Users can manage their own API keys" on public.api_keys;
create policy "Users can manage their own API keys" on public.api_keys
    for all to authenticated
    using (owner_id = (select auth.uid()))
    with check (owner_id = (select auth.uid()));

revoke all on table public.api_keys from anon, authenticated, service_role;
grant select (id, owner_id, name, prefix, created_at, expires_at, last_used_at) on table public.api_keys
    to authenticated;
grant insert (owner_id, name, prefix, key_hash, expires_at) on table public.api_keys to authenticated;
grant delete on table public.api_keys to authenticated;

-- api_key_owner(key_hash) -> table (owner_id uuid, key_id uuid)
--
-- The user a key acts as, or no row for an unknown, revoked or expired key. Touches last_used_at when it
-- is more than a minute old. Backend-only: no API role may execute it.
create or replace function public.api_key_owner(key_hash bytea)
returns table (owner_id uuid, key_id uuid)
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
    found_key record;
begin
    select k.id, k.owner_id, k.last_used_at into found_key
    from public.api_keys k
    where k.key_hash = api_key_owner.key_hash and (k.expires_at is null or k.expires_at > now());
    if not found then
        return;
    end if;
    if found_key.last_used_at is null or found_key.last_used_at < now() - interval '1 minute' then
        update public.api_keys k set last_used_at = now() where k.id = found_key.id;
    end if;
    owner_id := found_key.owner_id;
    key_id := found_key.id;
    return next;
end;
$$;
revoke all on function public.api_key_owner(bytea) from public, anon, authenticated, service_role;

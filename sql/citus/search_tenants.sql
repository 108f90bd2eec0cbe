-- search_tenants(collections) (Citus only) -> uuid[]
--
-- The tenants (distribution keys) whose chunks the calling role may read: the shards a search must
-- visit. The rule is the chunk policies' (migrations 013, 024), as search_scope_scan applies it:
--   service_role (or a superuser, the tables' owner): null = every tenant (the search fans out), or,
--                  for a search narrowed to `collections`, the tenants holding their documents;
--   authenticated: its own tenant (auth.uid()), plus the public tenant when the shared corpus has any
--                  chunk, plus the tenants holding the documents of the team collections the user is a
--                  member of (caller_collection_ids(); a collection's documents stay in their owners'
--                  tenants, sql/citus/distribute.sql). Narrowed to `collections`: its own tenant and
--                  those holding the documents of the named collections it is a member of. Without a
--                  shared corpus and collections a user's search is a single-shard (router) query;
--   any other role: none ('{}').
-- The members' tenants cost one read over every shard (documents_collection_id_idx), only for a
-- member of some collection. Only a pruning of the shards to visit: the policies still decide every
-- row (RLS on the workers). SECURITY DEFINER: the collections come from the caller's memberships (or
-- the service path's own argument), never from another user's rows, and only tenant keys come out.
-- Usage:   select search_tenants();  select search_tenants(array['…']::uuid[]);
set search_path = public, extensions;

drop function if exists public.search_tenants();

create or replace function public.search_tenants(collections uuid[] default null)
returns uuid[]
language plpgsql
stable
security definer
set search_path = public, pg_temp
as $$
declare
    caller name := coalesce(nullif(current_setting('role'), 'none'), session_user);
    user_id uuid := auth.uid();
    member_of uuid[];
    holders uuid[] := '{}';
    tenants uuid[];
begin
    if pg_has_role(caller, 'service_role', 'usage') then
        if collections is null then
            return null;
        end if;
        return array(select distinct d.tenant_id from public.documents d where d.collection_id = any(collections));
    end if;
    if not pg_has_role(caller, 'authenticated', 'usage') or user_id is null then
        return '{}';
    end if;
    member_of := public.caller_collection_ids();
    if collections is not null then
        member_of := array(select unnest(collections) intersect select unnest(member_of));
    end if;
    if cardinality(member_of) > 0 then
        holders := array(select distinct d.tenant_id from public.documents d where d.collection_id = any(member_of));
    end if;
    tenants := array[user_id];
    if collections is null
       and exists (select 1 from public.chunks c where c.tenant_id = public.tenant_key(null) limit 1) then
        tenants := array[public.tenant_key(null), user_id];
    end if;
    return array(select distinct t from unnest(tenants || holders) t order by 1);
end;
$$;
revoke execute on function public.search_tenants(uuid[]) from public, anon;
grant execute on function public.search_tenants(uuid[]) to authenticated, service_role;

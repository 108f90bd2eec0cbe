-- search_tenants() (Citus only) -> uuid[]
--
-- The tenants (distribution keys) whose chunks the calling role may read: the shards a search must
-- visit. The rule is the chunk policies' (migration 013), as hybrid_search_visible_matches applies it:
--   service_role (or a superuser, the tables' owner): null = every tenant (the search fans out);
--   authenticated: its own tenant (auth.uid()), plus the public tenant when the shared corpus has any
--                  chunk. Without a shared corpus a user's search is therefore a single-shard
--                  (router) query; with one, it reads two shards (or one, when both keys hash there);
--   any other role: none ('{}').
-- Only a pruning of the shards to visit: the policies still decide every row (RLS on the workers), and
-- db distribute's documents_public_is_the_public_tenant keeps public documents in the public tenant.
-- Usage:   select search_tenants();
set search_path = public, extensions;

create or replace function public.search_tenants()
returns uuid[]
language plpgsql
stable
set search_path = public, pg_temp
as $$
declare
    caller name := coalesce(nullif(current_setting('role'), 'none'), session_user);
    user_id uuid := auth.uid();
begin
    if pg_has_role(caller, 'service_role', 'usage') then
        return null;
    end if;
    if not pg_has_role(caller, 'authenticated', 'usage') or user_id is null then
        return '{}';
    end if;
    if exists (select 1 from public.chunks c where c.tenant_id = public.tenant_key(null) limit 1) then
        return array[public.tenant_key(null), user_id];
    end if;
    return array[user_id];
end;
$$;
revoke execute on function public.search_tenants() from public, anon;
grant execute on function public.search_tenants() to authenticated, service_role;

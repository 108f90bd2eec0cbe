-- tenant_visible_matches(match_query, filter, tenants) (Citus only) -> setof bigint
--
-- sql/hybrid_search_visible_matches.sql for the cluster: the ids of the chunks matching match_query
-- and filter that the calling role may read, among the tenants of `tenants` (search_tenants(); null:
-- every tenant), read as the owner so that the GIN index serves `fts @@ query` (under RLS it could not:
-- the operator is not LEAKPROOF), with the policy's rule applied here (service_role: every chunk,
-- authenticated: public ones and its own, anyone else: none). hybrid_search calls it on the
-- coordinator before its statement and reads the ids back under RLS. Naming the tenants prunes the
-- shards Citus visits (one or two for a user).
set search_path = public, extensions;

create or replace function public.tenant_visible_matches(match_query tsquery, filter jsonb, tenants uuid[])
returns setof bigint
language plpgsql
stable
security definer
set search_path = public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
declare
    caller name := coalesce(nullif(current_setting('role'), 'none'), session_user);
    all_rows boolean := pg_has_role(caller, 'service_role', 'usage');
    user_rows boolean := pg_has_role(caller, 'authenticated', 'usage');
    user_id uuid := auth.uid();
    f record;
begin
    if not (all_rows or user_rows) or match_query is null then
        return;
    end if;
    select * into f from public.search_filter(filter);
    return query
        select c.id
        from public.chunks c
        where (tenants is null or c.tenant_id = any(tenants))
          and c.fts @@ match_query
          and (f.containment = '{}'::jsonb or c.metadata @> f.containment)
          and (f.created_from is null or c.document_created_at >= f.created_from)
          and (f.created_until is null or c.document_created_at <= f.created_until)
          and (f.updated_from is null or c.document_updated_at >= f.updated_from)
          and (f.updated_until is null or c.document_updated_at <= f.updated_until)
          and (not f.residual or f.path is null
               or jsonb_path_match(case when f.dates then public.search_filter_target(
                       c.metadata, c.document_created_at, c.document_updated_at) else c.metadata end, f.path, f.vars))
          and (all_rows or c.visibility = 'public' or c.owner_id = user_id);
end;
$$;
revoke execute on function public.tenant_visible_matches(tsquery, jsonb, uuid[]) from public, anon;
grant execute on function public.tenant_visible_matches(tsquery, jsonb, uuid[]) to authenticated, service_role;

-- tenant_visible_matches(match_query, tenants, filter_path, filter_vars, filter_dates, containment,
--                        created_from, created_until, updated_from, updated_until, collections)
--                        (Citus only)
--     -> setof bigint
--
-- sql/hybrid_search_visible_matches.sql for the cluster: the ids of the chunks matching match_query
-- and the compiled filter (search_filter()'s parts, as hybrid_search compiled them once per call: the
-- path when residual, else null, its vars and dates, containment and the four date bounds) that the
-- calling role may read, among the tenants of `tenants` (search_tenants(); null: every tenant), read
-- as the owner so that the GIN index serves `fts @@ query` (under RLS it could not: the operator is
-- not LEAKPROOF), with the policy's rule applied here (service_role: every chunk, authenticated:
-- public ones, its own and its collections', anyone else: none), narrowed to `collections` when given. The path is evaluated only on rows the caller may read
-- (CASE fixes the order), as on one node. hybrid_search calls it on the coordinator before its
-- statement and reads the ids back under RLS. Naming the tenants prunes the shards Citus visits (one
-- or two for a user).
-- Migration 034's scope keys, as on one node: `chunk_scope_keys() && readable` (and `&& collections`)
-- beside the match lets chunks_fts_scope_idx step each term's postings to the caller's chunks. One
-- node fences the match (OFFSET 0) so that the planner does not AND the policies' btree indexes with
-- it; a fence would make Citus pull the rows to the coordinator, so here the rule is written `(…) is
-- true`, which no index serves: at 1M (tenant-10 %, 101k own chunks in its shard) that shard's part
-- took 10.7 ms with the owner's bitmap of 101k rows, 2.0 ms with the keys (same 1,253 ids).
set search_path = public, extensions;

-- Before migration 019 it took the filter itself and compiled it again.
drop function if exists public.tenant_visible_matches(tsquery, jsonb, uuid[]);

-- Before team collections reached the cluster it took no collections.
drop function if exists public.tenant_visible_matches(
    tsquery, uuid[], jsonpath, jsonb, boolean, jsonb, timestamptz, timestamptz, timestamptz, timestamptz
);

create or replace function public.tenant_visible_matches(
    match_query tsquery,
    tenants uuid[],
    filter_path jsonpath default null,
    filter_vars jsonb default '{}',
    filter_dates boolean default false,
    containment jsonb default '{}',
    created_from timestamptz default null,
    created_until timestamptz default null,
    updated_from timestamptz default null,
    updated_until timestamptz default null,
    collections uuid[] default null
)
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
    member_of uuid[] := case when user_rows and not all_rows then public.caller_collection_ids() else '{}' end;
    -- The keys of the scopes the caller reads (chunk_scope_keys(): public, own, collections).
    readable uuid[] := public.chunk_scope_keys('public', user_id, null) || member_of;
begin
    if not (all_rows or user_rows) or match_query is null then
        return;
    end if;
    return query
        select c.id
        from public.chunks c
        where (tenants is null or c.tenant_id = any(tenants))
          and c.fts @@ match_query
          and (all_rows or public.chunk_scope_keys(c.visibility, c.owner_id, c.collection_id) && readable)
          and (collections is null
               or public.chunk_scope_keys(c.visibility, c.owner_id, c.collection_id) && collections)
          and ((all_rows or c.visibility = 'public' or c.owner_id = user_id
                or c.collection_id = any(member_of)) is true)
          and ((collections is null or c.collection_id = any(collections)) is true)
          and (coalesce(containment, '{}'::jsonb) = '{}'::jsonb or c.metadata @> containment)
          and (created_from is null or c.document_created_at >= created_from)
          and (created_until is null or c.document_created_at <= created_until)
          and (updated_from is null or c.document_updated_at >= updated_from)
          and (updated_until is null or c.document_updated_at <= updated_until)
          and (filter_path is null
               or case when all_rows or c.visibility = 'public' or c.owner_id = user_id
                         or c.collection_id = any(member_of)
                       then jsonb_path_match(case when filter_dates then public.search_filter_target(
                           c.metadata, c.document_created_at, c.document_updated_at) else c.metadata end,
                           filter_path, coalesce(filter_vars, '{}'::jsonb))
                  end);
end;
$$;
revoke execute on function public.tenant_visible_matches(
    tsquery, uuid[], jsonpath, jsonb, boolean, jsonb, timestamptz, timestamptz, timestamptz, timestamptz, uuid[]
) from public, anon;
grant execute on function public.tenant_visible_matches(
    tsquery, uuid[], jsonpath, jsonb, boolean, jsonb, timestamptz, timestamptz, timestamptz, timestamptz, uuid[]
) to authenticated, service_role;

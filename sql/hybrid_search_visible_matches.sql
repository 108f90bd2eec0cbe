-- hybrid_search_visible_matches(match_query, filter_path, filter_vars, filter_dates, containment,
--                               created_from, created_until, updated_from, updated_until,
--                               collections) -> setof bigint
--
-- The ids of the chunks whose fts matches match_query (and that pass the filter, compiled by
-- search_filter(): its path when residual, else null, its vars and dates, containment and the four
-- date bounds; hybrid_search compiles it once per call and passes it down) that the caller may read. Why it exists: under row-level security PostgreSQL evaluates a query's own
-- conditions after the policies unless their operators are LEAKPROOF, and tsvector @@ tsquery is not,
-- so for an `authenticated` caller `fts @@ query` cannot drive the GIN index: the full-text leg
-- would read every visible chunk. This function runs as its owner (SECURITY DEFINER), so the GIN
-- index is used, and applies the rule of the chunk policies of migration 013 for the calling role:
--   service_role (or a superuser): every chunk;
--   authenticated: public chunks, the caller's own (owner_id = auth.uid()) and those of the
--                  collections the caller is a member of (caller_collection_ids(), migration 024);
--   any other role (anon): none.
-- collections (not null) keeps the chunks of those collections only (a search narrowed to them).
-- hybrid_search then reads these ids through the primary key, where RLS applies again: if this rule
-- and the policies ever disagreed, rows could only go missing, never appear.
-- The calling role is the one SET ROLE chose (PostgREST, backend/db/identity.py), else the session
-- user; call it from an invoker context (hybrid_search is SECURITY INVOKER).
-- The path is evaluated only on rows the caller may read (CASE fixes the order): it comes from the
-- caller, and one that fails or runs long on another tenant's row would tell something about it.
-- Usage:   select count(*) from hybrid_search_visible_matches(or_tsquery('袋鼠'));
--          select count(*) from search_filter('{"lang": "zh"}') f, hybrid_search_visible_matches(
--              or_tsquery('袋鼠'), case when f.residual then f.path end, f.vars, f.dates, f.containment,
--              f.created_from, f.created_until, f.updated_from, f.updated_until);
set search_path = public, extensions;

-- Before 019 it took the filter itself and compiled it again (a second time per hybrid_search call);
-- before 025 it had no collections; before 034 it intersected the match with the scope in a bitmap.
drop function if exists public.hybrid_search_visible_matches(tsquery, jsonb);
drop function if exists public.hybrid_search_visible_matches(
    tsquery, jsonpath, jsonb, boolean, jsonb, timestamptz, timestamptz, timestamptz, timestamptz
);

create or replace function public.hybrid_search_visible_matches(
    match_query tsquery,
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
-- A generic plan cannot know how selective match_query is and falls back to a sequential scan
-- (20 ms instead of 0.2 ms at 100k chunks): plan each call for its own query.
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
    if not (all_rows or user_rows) then
        return;
    end if;
    return query
        select c.id
        -- The GIN match and the caller's scope (the policy's rule and the narrowing) in one scan of
        -- chunks_fts_scope_idx, then the filter on its rows. The match is sized by the caller's term
        -- statistics (match_df_budget counts the scopes the caller reads), but a term's postings
        -- hold every tenant's chunks: a tenant's match of ~1,000 rows read ~100,000 at 1M chunks.
        -- With the scope's keys (chunk_scope_keys() && readable, && collections) as the index's
        -- second column, GIN steps each term's posting list to the next chunk of the scope (3-5 ms
        -- for a 1 % tenant or collection at 1M, where a bitmap of the whole match ANDed with the
        -- policies' btree indexes took 16-18 ms and reading the matches' rows 66-258 ms: migrations
        -- 034 and 033, docs/benchmarks.md). The policy's rule itself is tested on the rows found,
        -- behind the OFFSET 0 fence with the filter (a key is necessary, not sufficient; inside, the
        -- planner would AND the policies' btree indexes again, and did for small tables); a filter
        -- admitting half the table made it AND a bitmap of every row the filter admits. For
        -- service_role the conditions fold to true: the match alone.
        from (select * from public.chunks c0
              where c0.fts @@ match_query
                and (all_rows
                     or public.chunk_scope_keys(c0.visibility, c0.owner_id, c0.collection_id) && readable)
                and (collections is null
                     or public.chunk_scope_keys(c0.visibility, c0.owner_id, c0.collection_id) && collections)
              offset 0) c
        where (all_rows or c.visibility = 'public' or c.owner_id = user_id or c.collection_id = any(member_of))
          and (collections is null or c.collection_id = any(collections))
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
-- A definer function reaches every chunk: only the roles hybrid_search runs as may call it.
revoke execute on function public.hybrid_search_visible_matches(
    tsquery, jsonpath, jsonb, boolean, jsonb, timestamptz, timestamptz, timestamptz, timestamptz, uuid[]
) from public, anon;
grant execute on function public.hybrid_search_visible_matches(
    tsquery, jsonpath, jsonb, boolean, jsonb, timestamptz, timestamptz, timestamptz, timestamptz, uuid[]
) to authenticated, service_role;

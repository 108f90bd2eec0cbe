-- match_documents(query_embedding, match_count, min_similarity, filter, ...) (Citus) -> chunk rows
--
-- Single-node counterpart: sql/match_documents.sql (parameters, columns, plans). On the cluster: the
-- tenants in scope prune the shards (search_tenants(), $16 of match_documents_query), and the HNSW
-- settings are SET LOCAL so they reach the workers (see sql/citus/hybrid_search.sql).
-- Team collections: `collections` narrows as on one node ($17 of match_documents_query), and
-- search_tenants(collections) adds the tenants holding the collections' documents.
-- Migration 029 turns enable_sort off for the single node's HNSW statement; carried as SET LOCAL
-- and set back after the statement (why: sql/citus/hybrid_search.sql).
-- Migration 046 passes the single node's statement the scope's size as $5 (its ids before); the
-- cluster's statement keeps the ids ($5, cardinality() for scope_count), which its search_scope_scan
-- still returns.
set search_path = public, extensions;

create or replace function public.match_documents(
    query_embedding vector,
    match_count integer default 10,
    min_similarity double precision default 0.3,
    filter jsonb default '{}'::jsonb,
    query_embedding_model text default null,
    ef_search integer default 200,
    filtered_ef_search integer default 200,
    exact_scan_threshold integer default 3000,
    collections uuid[] default null
)
returns table (
    id bigint,
    document_id uuid,
    external_id text,
    title text,
    "position" integer,
    content text,
    heading_path text[],
    content_hash text,
    content_tokens text,
    metadata jsonb,
    embedding_model text,
    similarity double precision,
    vector_rank integer,
    scope_count integer
)
language plpgsql
-- volatile: SET LOCAL (below) is refused in a stable function, and only SET LOCAL reaches the workers
volatile
set search_path = public, extensions, pg_temp
set hnsw.iterative_scan = relaxed_order
set hnsw.ef_search = 200
as $$
declare
    dims integer := vector_dims(query_embedding);
    compiled record;
    scope_ids bigint[];
    scope_nearest bigint[];
    scope_distances double precision[];
    exact boolean := false;
    sort_setting text;
    tenants uuid[] := public.search_tenants(collections);
begin
    if match_count is null or match_count < 1 or match_count > 1000 then
        raise exception 'match_count must be between 1 and 1000, got %', match_count using errcode = '22023';
    end if;
    if exact_scan_threshold is null or exact_scan_threshold < 0 or exact_scan_threshold > 1000000 then
        raise exception 'exact_scan_threshold must be between 0 and 1000000, got %', exact_scan_threshold
            using errcode = '22023';
    end if;
    -- Compiled once per call, here; the helpers take the compiled parts (a bad filter fails before any work).
    select * into compiled from public.search_filter(filter);
    if not public.assert_embedding_space(dims, query_embedding_model) or cardinality(tenants) = 0 then
        return;
    end if;
    if exact_scan_threshold > 0
       and (compiled.path is not null or row_security_active('public.chunks') or collections is not null) then
        select s.ids, s.nearest, s.distances into scope_ids, scope_nearest, scope_distances
        from public.search_scope_scan(exact_scan_threshold, query_embedding, dims,
                                      query_embedding_model, match_count,
                                      case when compiled.residual then compiled.path end, compiled.vars,
                                      compiled.dates, compiled.containment, compiled.created_from,
                                      compiled.created_until, compiled.updated_from, compiled.updated_until,
                                      collections) s;
        exact := scope_ids is not null;
    end if;
    -- The HNSW walk runs on the workers: SET LOCAL reaches them (see sql/citus/hybrid_search.sql).
    execute format('set local hnsw.ef_search = %s', greatest(
        -- a scope (a filter, or the policies' public + own) leaves fewer neighbours to find: a wider beam
        case when coalesce(filter, '{}'::jsonb) = '{}'::jsonb and not row_security_active('public.chunks')
                  and collections is null then ef_search
             else filtered_ef_search end,
        match_count));
    set local hnsw.iterative_scan = relaxed_order;
    if not exact and public.search_parts_walkable(tenants, exact_scan_threshold) then
        sort_setting := current_setting('enable_sort');
        set local enable_sort = off;  -- the walk on every shard (sql/citus/hybrid_search.sql)
    end if;

    return query execute public.match_documents_query(dims, exact)
    using query_embedding, match_count, query_embedding_model, min_similarity,
          scope_ids, case when compiled.residual then compiled.path end, compiled.vars, compiled.dates,
          compiled.containment, compiled.created_from, compiled.created_until, compiled.updated_from,
          compiled.updated_until, scope_nearest, scope_distances, tenants, collections;
    if sort_setting is not null then
        execute format('set local enable_sort = %L', sort_setting);
    end if;
end;
$$;

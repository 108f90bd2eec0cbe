-- hybrid_search(query_text, query_embedding, match_count, ...) (Citus) -> chunk rows fused by RRF
--
-- Single-node counterpart: sql/hybrid_search.sql, whose header documents every parameter and column.
-- Same signature, same validation, same legs and fusion (sql/citus/hybrid_search_query.sql); what the
-- cluster changes:
--   * the shards: search_tenants() names the tenants the caller may read (a user: their own, the public
--     tenant when there is a shared corpus, and those holding their collections' documents; the service
--     role and the owner: all), and every
--     read of the statement is pruned to their shards: one tenant is a single-shard router query,
--     several are a fan-out whose per-leg top lists the coordinator merges and fuses;
--   * under RLS the full-text leg's matches come from tenant_visible_matches() on the coordinator, before
--     the statement ($28), instead of from inside it;
--   * hnsw.ef_search and hnsw.iterative_scan are SET LOCAL, which Citus sends to the workers that walk
--     the HNSW indexes (hence volatile; they last until the transaction ends, where single node's
--     function-level settings end with the call).
-- Row-level security is the workers': Citus connects as the request's role, with its claims.
-- Team collections (migrations 024/025): `collections` narrows as on one node; search_tenants(collections)
-- adds the tenants holding the documents of the caller's (or the named) collections, which stay in
-- their owners' tenants (sql/citus/distribute.sql).
-- Migration 029 turns enable_sort off for the single node's HNSW statement (the vector leg then walks
-- HNSW rather than sorting a bitmap scan of a scope the planner underestimates under RLS). On the
-- cluster the underestimate is per shard: the tenants named and the policy select the same rows, and
-- the planner multiplies them (the public tenant's 9,817 chunks of a 74,669-chunk shard: 1,285
-- estimated), so a user's search sorted every public chunk read with its TOASTed embedding (69k
-- buffers, 92 ms at 1M) instead of walking. It is carried as SET LOCAL (the form that reaches the
-- workers), set back to its former value once the statement has run, and only when every tenant's
-- part of the scope is large enough to walk (search_parts_walkable(): one setting serves all shards).
-- Migration 046 has the single node's exact plan decided by search_scope_scan's scope_count, its ids
-- returned up to 1,000 only (its full-text leg then reads the match first); the cluster's
-- search_scope_scan returns every counted scope's ids, which its full-text leg reads: kept.
set search_path = public, extensions;

create or replace function public.hybrid_search(
    query_text text,
    query_embedding vector,
    match_count integer default 10,
    full_text_weight double precision default 1.0,
    semantic_weight double precision default 1.0,
    rrf_k integer default 60,
    filter jsonb default '{}'::jsonb,
    query_embedding_model text default null,
    candidate_count integer default null,
    ef_search integer default 200,
    common_term_ratio double precision default 0.1,
    common_term_min_df integer default 5000,
    length_norm double precision default 0.5,
    match_df_budget integer default 2000,
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
    full_text_rank integer,
    vector_rank integer,
    full_text_score real,
    rrf_score double precision,
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
    leg_count integer := coalesce(candidate_count, greatest(match_count * 4, 40));
    use_vector boolean := query_embedding is not null and semantic_weight > 0;
    use_text boolean := false;
    avg_length double precision := 1;
    term_queries tsquery[];
    term_idfs double precision[];
    match_query tsquery;
    row_security boolean := row_security_active('public.chunks');
    tenants uuid[] := public.search_tenants(collections);
    visible_matches bigint[];
    compiled record;
    scope_ids bigint[];
    scope_nearest bigint[];
    scope_distances double precision[];
    exact boolean := false;
    sort_setting text;
begin
    if match_count is null or match_count < 1 or match_count > 1000 then
        raise exception 'match_count must be between 1 and 1000, got %', match_count using errcode = '22023';
    end if;
    if full_text_weight < 0 or semantic_weight < 0 then
        raise exception 'weights must not be negative (full_text_weight %, semantic_weight %)',
            full_text_weight, semantic_weight using errcode = '22023';
    end if;
    if rrf_k is null or rrf_k < 1 then
        raise exception 'rrf_k must be at least 1, got %', rrf_k using errcode = '22023';
    end if;
    if leg_count < match_count or leg_count > 10000 then
        raise exception 'candidate_count must be between match_count and 10000, got %', leg_count
            using errcode = '22023';
    end if;
    if length_norm is null or length_norm < 0 or length_norm > 1 then
        raise exception 'length_norm must be between 0 and 1, got %', length_norm using errcode = '22023';
    end if;
    if exact_scan_threshold is null or exact_scan_threshold < 0 or exact_scan_threshold > 1000000 then
        raise exception 'exact_scan_threshold must be between 0 and 1000000, got %', exact_scan_threshold
            using errcode = '22023';
    end if;
    -- Compiled once per call, here; the helpers take the compiled parts (a bad filter fails before any work).
    select * into compiled from public.search_filter(filter);
    if use_vector and not public.assert_embedding_space(dims, query_embedding_model) then
        return;  -- no chunks at all
    end if;

    if full_text_weight > 0 and coalesce(query_text, '') <> '' then
        select t.term_queries, t.term_idfs, t.match_query, t.avg_length
        into term_queries, term_idfs, match_query, avg_length
        from public.hybrid_search_terms(query_text, common_term_ratio, common_term_min_df,
                                        match_df_budget) t;
        use_text := match_query is not null;
    end if;
    if (not use_text and not use_vector) or cardinality(tenants) = 0 then
        return;
    end if;
    if exact_scan_threshold > 0 and (compiled.path is not null or row_security or collections is not null) then
        select s.ids, s.nearest, s.distances into scope_ids, scope_nearest, scope_distances
        from public.search_scope_scan(exact_scan_threshold,
                                      case when use_vector then query_embedding end, dims,
                                      query_embedding_model, leg_count,
                                      case when compiled.residual then compiled.path end, compiled.vars,
                                      compiled.dates, compiled.containment, compiled.created_from,
                                      compiled.created_until, compiled.updated_from, compiled.updated_until,
                                      collections) s;
        exact := scope_ids is not null;
    end if;
    if use_text and row_security and not exact then
        visible_matches := array(select public.tenant_visible_matches(
            match_query, tenants, case when compiled.residual then compiled.path end, compiled.vars,
            compiled.dates, compiled.containment, compiled.created_from, compiled.created_until,
            compiled.updated_from, compiled.updated_until, collections));
    end if;
    -- The HNSW walks run on the workers: the beam and the iterative scan travel there as SET LOCAL
    -- (citus.propagate_set_commands = local); set_config() would stay on the coordinator.
    execute format('set local hnsw.ef_search = %s', greatest(
        -- a scope (a filter, or the policies' public + own) leaves fewer neighbours to find: a wider beam
        case when coalesce(filter, '{}'::jsonb) = '{}'::jsonb and not row_security and collections is null
             then ef_search
             else filtered_ef_search end,
        leg_count));
    set local hnsw.iterative_scan = relaxed_order;
    if not exact and use_vector and public.search_parts_walkable(tenants, exact_scan_threshold) then
        sort_setting := current_setting('enable_sort');
        set local enable_sort = off;  -- the vector leg walks HNSW on every shard (header)
    end if;

    return query execute public.hybrid_search_query(coalesce(dims, 1), row_security, exact)
    using query_embedding, match_query, leg_count, coalesce(filter, '{}'::jsonb),
          full_text_weight, semantic_weight, use_text, use_vector, query_embedding_model,
          rrf_k::double precision, match_count, term_queries, term_idfs, length_norm, avg_length,
          scope_ids, case when compiled.residual then compiled.path end, compiled.vars, compiled.dates,
          compiled.containment, compiled.created_from, compiled.created_until, compiled.updated_from,
          compiled.updated_until, scope_nearest, scope_distances, tenants, visible_matches, collections;
    if sort_setting is not null then
        execute format('set local enable_sort = %L', sort_setting);
    end if;
end;
$$;

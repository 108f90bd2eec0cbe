-- hybrid_search(query_text, query_embedding, match_count, full_text_weight, semantic_weight,
--               rrf_k, filter, ...) -> chunk rows fused by Reciprocal Rank Fusion
--
-- Stage 1 of retrieval. Two retrievers, one CTE each, fused in SQL:
--   full_text  chunks whose fts contains ANY significant query term (GIN), ranked BM25-style:
--              the sum over the query's terms of idf(term) * ts_rank(fts, term) (ts_rank saturates
--              with the term's frequency), divided by the pivoted length norm
--              1 - b + b * length(fts) / average length. idf = ln(1 + (N - df + 0.5) / (df + 0.5))
--              comes from term_stats / corpus_stats, kept current by triggers on chunks, so a rare
--              term outweighs a common one. Terms in more chunks than
--              max(common_term_ratio * N, common_term_min_df) are left out of the GIN match (they
--              still score the rows that match): their long posting lists make OR queries slow.
--   semantic   the nearest chunks by cosine through the partial HNSW index of the query's dimension.
-- rrf_score = full_text_weight / (rrf_k + full_text_rank) + semantic_weight / (rrf_k + vector_rank),
-- a missing leg contributing 0. Every returned row also carries its cosine similarity to the query
-- (computed for full-text-only rows too) and its content_tokens, so the Python reranker needs neither
-- a second query nor a second segmentation.
--
-- Parameters
--   query_text             jieba-segmented query, stopwords removed (backend.text.query_terms);
--                          null or empty skips the full-text leg.
--   query_embedding        query vector; null skips the vector leg (pure full-text search).
--   match_count            rows returned after fusion (1..1000).
--   full_text_weight       weight of the full-text leg; 0 skips the leg entirely.
--   semantic_weight        weight of the vector leg; 0 skips the leg entirely.
--   rrf_k                  RRF smoothing constant: larger flattens the rank contribution.
--   filter                 which chunks may be returned: the grammar of search_filter() (metadata
--                          fields, the document dates created_at / updated_at, $eq $ne $in $nin $gt
--                          $gte $lt $lte $exists $contains, $and / $or), applied inside each leg
--                          before its limit. A plain {"lang": "zh"} or {"tags": ["x"]} still works.
--                          Compiled once per call (search_filter(), linear in its size); the helpers
--                          (search_scope_scan, hybrid_search_visible_matches) and the statement take
--                          the compiled parts.
--   query_embedding_model  restricts the vector leg to chunks embedded by this model and raises a
--                          clear error when the corpus was embedded by another one.
--   candidate_count        rows each leg fetches before fusion; default max(4 * match_count, 40). The
--                          fused top 10 needs that depth: asking each leg for match_count when a scope
--                          walks HNSW halved the walk at 1M but moved the fused top 10 (recall@10 0.66
--                          at a 10 % filter; docs/benchmarks.md, issue 31).
--   ef_search              hnsw.ef_search for this call (200 since migration 031: see match_documents).
--   filtered_ef_search     hnsw.ef_search when filter is not empty or RLS applies (a scope needs a wider
--                          beam to keep recall; see match_documents).
--   common_term_ratio, common_term_min_df
--                          a term in more chunks than both is too common to drive the GIN match.
--   length_norm            b of the length normalisation (0 = none, 1 = full).
--   exact_scan_threshold   when the chunks the caller may read that pass the filter number at most
--                          this, both legs rank exactly those rows (search_scope_scan(): a statistics
--                          estimate, then at most this + 1 ids read through indexes, and the
--                          distance of each computed) instead of walking HNSW, which is both
--                          exact and faster for a small scope.
--                          0 always walks HNSW. Only a filter, row-level security or collections
--                          make a scope.
--   collections            narrows the search to the chunks of these team collections (migration 024);
--                          null searches everything the caller may read. A collection the caller is no
--                          member of adds nothing (the policies and search_scope_scan's rule).
--   match_df_budget        the match uses the rarest terms while their document frequencies add up
--                          to at most this; when the rarest alone exceeds it, the chunks containing
--                          both of the two rarest terms. It bounds the rows the leg scores on large
--                          corpora (bench/latency) and changes nothing on small ones.
--
-- scope_count (every row): how many chunks the scope admitted when it was ranked exactly; null when
-- the call walked HNSW (no filter and no RLS, or a scope above exact_scan_threshold).
-- Plans by selectivity: with a filter or under row-level security, search_scope_scan() estimates the
-- admitted chunks from statistics and, unless clearly too many, reads them up to
-- exact_scan_threshold + 1 (index-served, bounded); few enough, it computes their distances, and
-- the vector leg takes their nearest, the full-text leg reads its matches among those ids (exact
-- top-k); more, and the vector leg walks HNSW with an iterative scan
-- that skips rows the filter or the policies reject, the full-text leg checks its GIN matches.
--
-- Row-level security: SECURITY INVOKER, so the chunk and document policies decide what a caller
-- sees (a user: public chunks and their own). For such a caller the full-text leg takes its matches
-- from hybrid_search_visible_matches() so that the GIN index is still used.
--
-- EXPLAIN: the statement is built per dimension by hybrid_search_query(dims, row_security); PREPARE
-- that text and EXPLAIN ANALYZE EXECUTE it (sql/README.md shows the exact commands).
-- Resolves pgvector's types whether it lives in `extensions` (Supabase) or `public`.
set search_path = public, extensions;

-- Migration 004 shipped a shorter signature (an old overload would make named calls ambiguous), and a
-- changed result row cannot be replaced in place: drop, then create.
drop function if exists public.hybrid_search(
    text, vector, integer, double precision, double precision, integer, jsonb, text, integer, integer
);
drop function if exists public.hybrid_search(
    text, vector, integer, double precision, double precision, integer, jsonb, text, integer, integer,
    double precision, integer, double precision
);
drop function if exists public.hybrid_search(
    text, vector, integer, double precision, double precision, integer, jsonb, text, integer, integer,
    double precision, integer, double precision, integer
);
drop function if exists public.hybrid_search(
    text, vector, integer, double precision, double precision, integer, jsonb, text, integer, integer,
    double precision, integer, double precision, integer, integer
);
drop function if exists public.hybrid_search(
    text, vector, integer, double precision, double precision, integer, jsonb, text, integer, integer,
    double precision, integer, double precision, integer, integer, integer
);  -- before 025: no collections

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
stable
set search_path = public, extensions, pg_temp
set hnsw.iterative_scan = relaxed_order
set hnsw.ef_search = 200
-- restored when the function returns, whatever the body set (below: off for the HNSW statement)
set enable_sort = on
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
    compiled record;
    scope_ids bigint[];
    scope_count integer;
    scope_nearest bigint[];
    scope_distances double precision[];
    exact boolean := false;
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
    if not use_text and not use_vector then
        return;
    end if;
    if exact_scan_threshold > 0 and (compiled.path is not null or row_security or collections is not null) then
        select s.ids, s.scope_count, s.nearest, s.distances
        into scope_ids, scope_count, scope_nearest, scope_distances
        from public.search_scope_scan(exact_scan_threshold,
                                      case when use_vector then query_embedding end, dims,
                                      query_embedding_model, leg_count,
                                      case when compiled.residual then compiled.path end, compiled.vars,
                                      compiled.dates, compiled.containment, compiled.created_from,
                                      compiled.created_until, compiled.updated_from, compiled.updated_until,
                                      collections) s;
        exact := scope_count is not null;
        -- Without a query vector search_scope_scan returns every counted id (search_scope() reads
        -- them); the full-text leg reads ids by key up to 1,000 only, its match first above (migration
        -- 033): above 1,000 it gets none (migration 050; 046-049 read up to the threshold's by key).
        if cardinality(scope_ids) > 1000 then
            scope_ids := null;
        end if;
    end if;
    perform set_config('hnsw.ef_search', greatest(
        -- a scope (a filter, or the policies' public + own) leaves fewer neighbours to find: a wider beam
        case when coalesce(filter, '{}'::jsonb) = '{}'::jsonb and not row_security and collections is null
             then ef_search
             else filtered_ef_search end,
        leg_count)::text, true);

    if not exact and use_vector then
        -- The scope is large (or no scope was counted): the vector leg walks HNSW, the one plan that
        -- needs no sort. Under RLS its estimate multiplies a narrowing by the correlated policy, and
        -- the planner then sorted a bitmap heap scan of the whole scope (migration 029). The sorts
        -- the statement cannot avoid (the full-text leg's ranking, the fusion) still run.
        perform set_config('enable_sort', 'off', true);
    end if;
    return query execute public.hybrid_search_query(coalesce(dims, 1), row_security, exact)
    using query_embedding, match_query, leg_count, coalesce(filter, '{}'::jsonb),
          full_text_weight, semantic_weight, use_text, use_vector, query_embedding_model,
          rrf_k::double precision, match_count, term_queries, term_idfs, length_norm, avg_length,
          scope_ids, case when compiled.residual then compiled.path end, compiled.vars, compiled.dates,
          compiled.containment, compiled.created_from, compiled.created_until, compiled.updated_from,
          compiled.updated_until, scope_nearest, scope_distances, collections, scope_count;
end;
$$;

-- match_documents(query_embedding, match_count, min_similarity, filter, ...) -> chunk rows
--
-- Vector-only retrieval: the match_count chunks nearest to query_embedding by cosine, best first,
-- keeping those with similarity >= min_similarity.
--
-- Parameters
--   query_embedding        the query vector; its dimension picks the partial HNSW index
--                          (chunks_embedding_<dims>_hnsw_idx).
--   match_count            rows to return (1..1000).
--   min_similarity         cosine similarity floor (1 = identical direction); the seed's 0.3, as
--                          RAG_MIN_SIMILARITY (one default: the application passes its setting).
--   filter                 which chunks may be returned, in search_filter()'s grammar (metadata fields,
--                          the document dates created_at / updated_at, $eq $ne $in $nin $gt $gte $lt
--                          $lte $exists $contains, $and / $or), applied inside the scan, e.g.
--                          '{"lang": "zh"}', '{"tags": ["invoice"]}', '{"text_len": {"$gte": 200}}'.
--                          Compiled once per call (search_filter()); search_scope_scan and the
--                          statement take the compiled parts.
--   query_embedding_model  when given, only chunks embedded by this model are searched and a
--                          corpus embedded by another model raises an error (never a silent mix).
--   ef_search              hnsw.ef_search for this call: higher = better recall, slower. 200 since
--                          migration 031: recall@10 0.983 against 0.947 at 100 at 1M chunks (issue 31).
--   filtered_ef_search     hnsw.ef_search when filter is not empty or RLS applies. A scope leaves few
--                          matching chunks in the graph neighbourhood the beam explores: at 100k
--                          chunks with a 1% filter, recall@10 is 0.83 at ef_search 100 and 1.00 at
--                          200 (bench/latency).
--   exact_scan_threshold   when the chunks the caller may read that pass the filter number at most
--                          this (search_scope_scan(): a statistics estimate, then at most this + 1
--                          ids), the distance of every one is computed: the exact
--                          top match_count of the scope, no HNSW. 0: always HNSW.
--   collections            narrows the search to these team collections' chunks (migration 024);
--                          null: everything the caller may read.
--
-- scope_count (every row): the admitted chunks when the scope was ranked exactly; null: HNSW.
-- Plans by selectivity: with a filter or under row-level security the admitted scope is counted
-- first (bounded, index-served: search_scope_scan); a small one is ranked exactly.
-- A selective filter does not starve the result: hnsw.iterative_scan (relaxed_order) keeps
-- scanning the index until match_count rows pass the filter (bounded by hnsw.max_scan_tuples).
--
-- EXPLAIN: the dimension is part of the index expression, so the statement is built per dimension
-- by match_documents_query(dims); PREPARE that text and EXPLAIN ANALYZE EXECUTE it (sql/README.md).
-- Resolves pgvector's types whether it lives in `extensions` (Supabase) or `public`.
set search_path = public, extensions;

-- A changed result row cannot be replaced in place: drop, then create.
drop function if exists public.match_documents(vector, integer, double precision, jsonb, text, integer);
drop function if exists public.match_documents(
    vector, integer, double precision, jsonb, text, integer, integer
);
drop function if exists public.match_documents(
    vector, integer, double precision, jsonb, text, integer, integer, integer
);

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
stable
set search_path = public, extensions, pg_temp
set hnsw.iterative_scan = relaxed_order
set hnsw.ef_search = 200
-- restored when the function returns, whatever the body set (below: off for the HNSW statement)
set enable_sort = on
as $$
declare
    dims integer := vector_dims(query_embedding);
    compiled record;
    scope_count integer;
    scope_nearest bigint[];
    scope_distances double precision[];
    exact boolean := false;
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
    if not public.assert_embedding_space(dims, query_embedding_model) then
        return;
    end if;
    if exact_scan_threshold > 0
       and (compiled.path is not null or row_security_active('public.chunks') or collections is not null) then
        select s.scope_count, s.nearest, s.distances into scope_count, scope_nearest, scope_distances
        from public.search_scope_scan(exact_scan_threshold, query_embedding, dims,
                                      query_embedding_model, match_count,
                                      case when compiled.residual then compiled.path end, compiled.vars,
                                      compiled.dates, compiled.containment, compiled.created_from,
                                      compiled.created_until, compiled.updated_from, compiled.updated_until,
                                      collections) s;
        exact := scope_count is not null;
    end if;
    perform set_config('hnsw.ef_search', greatest(
        -- a scope (a filter, or the policies' public + own) leaves fewer neighbours to find: a wider beam
        case when coalesce(filter, '{}'::jsonb) = '{}'::jsonb and not row_security_active('public.chunks')
                  and collections is null then ef_search
             else filtered_ef_search end,
        match_count)::text, true);

    if not exact then
        -- The scope is large (or no scope was counted): the vector leg walks HNSW, the one plan that
        -- needs no sort. Under RLS the statement's own estimate multiplies a narrowing by the
        -- correlated policy (1,007 rows for a collection of 9,306 of 100k chunks), and the planner
        -- then sorted a bitmap heap scan of the whole scope with its out-of-line embeddings: 48 ms
        -- against 4 ms through HNSW (migration 029). Sorts the statement cannot avoid still run.
        perform set_config('enable_sort', 'off', true);
    end if;
    return query execute public.match_documents_query(dims, exact)
    using query_embedding, match_count, query_embedding_model, min_similarity,
          scope_count, case when compiled.residual then compiled.path end, compiled.vars, compiled.dates,
          compiled.containment, compiled.created_from, compiled.created_until, compiled.updated_from,
          compiled.updated_until, scope_nearest, scope_distances, collections;
end;
$$;

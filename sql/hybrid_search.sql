-- hybrid_search_query(dims) -> text
--
-- The statement hybrid_search executes for a query vector of `dims` dimensions. Parameters:
-- $1 query embedding, $2 tsquery, $3 candidates per leg, $4 filter, $5 full-text weight,
-- $6 semantic weight, $7 run the full-text leg, $8 run the vector leg, $9 model or null,
-- $10 rrf_k, $11 match_count. Kept separate so a DBA can PREPARE and EXPLAIN exactly what runs.
-- Resolves pgvector's types whether it lives in `extensions` (Supabase) or `public`.
set search_path = public, extensions;

create or replace function public.hybrid_search_query(dims integer)
returns text
language sql
immutable
parallel safe
set search_path = public, pg_temp
as $fn$
    select format($q$
        with full_text as (
            select c.id,
                   ts_rank_cd(c.fts, $2, 1) as score,
                   row_number() over (order by ts_rank_cd(c.fts, $2, 1) desc, c.id)::integer as rank_ix
            from public.chunks c
            where $7 and c.fts @@ $2 and c.metadata @> $4
            order by rank_ix
            limit $3
        ),
        nearest as materialized (
            select c.id, c.embedding::vector(%1$s) <=> $1::vector(%1$s) as distance
            from public.chunks c
            where $8 and c.embedding_dims = %1$s
              and c.metadata @> $4
              and ($9::text is null or c.embedding_model = $9)
            order by c.embedding::vector(%1$s) <=> $1::vector(%1$s)
            limit $3
        ),
        semantic as (
            select n.id, row_number() over (order by n.distance, n.id)::integer as rank_ix
            from nearest n
        ),
        fused as (
            select coalesce(f.id, s.id) as id,
                   f.rank_ix as full_text_rank,
                   s.rank_ix as vector_rank,
                   f.score as full_text_score,
                   coalesce($5 / ($10 + f.rank_ix), 0.0) + coalesce($6 / ($10 + s.rank_ix), 0.0) as rrf_score
            from full_text f
            full outer join semantic s on s.id = f.id
            order by rrf_score desc, coalesce(f.id, s.id)
            limit $11
        )
        select c.id, c.document_id, d.external_id, d.title, c.position, c.content, c.heading_path,
               c.content_hash, c.metadata, c.embedding_model,
               case when $1 is null or c.embedding_dims <> %1$s then null
                    else 1 - (c.embedding <=> $1) end as similarity,
               fu.full_text_rank, fu.vector_rank, fu.full_text_score, fu.rrf_score
        from fused fu
        join public.chunks c on c.id = fu.id
        join public.documents d on d.id = c.document_id
        order by fu.rrf_score desc, fu.id
    $q$, dims);
$fn$;

-- hybrid_search(query_text, query_embedding, match_count, full_text_weight, semantic_weight,
--               rrf_k, filter, ...) -> chunk rows fused by Reciprocal Rank Fusion
--
-- Stage 1 of retrieval. Two retrievers, one CTE each, fused in SQL:
--   full_text  chunks whose fts matches ANY lexeme of query_text (or_tsquery), ranked by
--              ts_rank_cd(fts, query, 1) (cover density, normalised by log document length);
--   semantic   the nearest chunks by cosine through the partial HNSW index of the query's dimension.
-- rrf_score = full_text_weight / (rrf_k + full_text_rank) + semantic_weight / (rrf_k + vector_rank),
-- a missing leg contributing 0. Every returned row also carries its cosine similarity to the query
-- (computed for full-text-only rows too), so the Python reranker needs no second query.
--
-- Parameters
--   query_text             jieba-segmented query, stopwords removed (backend.text.segment);
--                          null or empty skips the full-text leg.
--   query_embedding        query vector; null skips the vector leg (pure full-text search).
--   match_count            rows returned after fusion (1..1000).
--   full_text_weight       weight of the full-text leg; 0 skips the leg entirely.
--   semantic_weight        weight of the vector leg; 0 skips the leg entirely.
--   rrf_k                  RRF smoothing constant: larger flattens the rank contribution.
--   filter                 jsonb containment filter on chunk metadata, applied inside each leg
--                          before its limit (metadata @> filter).
--   query_embedding_model  restricts the vector leg to chunks embedded by this model and raises a
--                          clear error when the corpus was embedded by another one.
--   candidate_count        rows each leg fetches before fusion; default max(4 * match_count, 40).
--   ef_search              hnsw.ef_search for this call.
--
-- EXPLAIN: the statement is built per dimension by hybrid_search_query(dims); PREPARE that text
-- and EXPLAIN ANALYZE EXECUTE it (sql/README.md shows the exact commands).
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
    ef_search integer default 100
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
    metadata jsonb,
    embedding_model text,
    similarity double precision,
    full_text_rank integer,
    vector_rank integer,
    full_text_score real,
    rrf_score double precision
)
language plpgsql
stable
set search_path = public, extensions, pg_temp
set hnsw.iterative_scan = relaxed_order
set hnsw.ef_search = 100
as $$
declare
    dims integer := vector_dims(query_embedding);
    ts_query tsquery := public.or_tsquery(query_text);
    leg_count integer := coalesce(candidate_count, greatest(match_count * 4, 40));
    use_vector boolean := query_embedding is not null and semantic_weight > 0;
    use_text boolean;
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
    if use_vector and not public.assert_embedding_space(dims, query_embedding_model) then
        return;  -- no chunks at all
    end if;
    use_text := ts_query is not null and full_text_weight > 0;
    if not use_text and not use_vector then
        return;
    end if;
    perform set_config('hnsw.ef_search', greatest(ef_search, leg_count)::text, true);

    return query execute public.hybrid_search_query(coalesce(dims, 1))
    using query_embedding, ts_query, leg_count, coalesce(filter, '{}'::jsonb),
          full_text_weight, semantic_weight, use_text, use_vector, query_embedding_model,
          rrf_k::double precision, match_count;
end;
$$;

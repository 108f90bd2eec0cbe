-- hybrid_search_query(dims) -> text
--
-- The statement hybrid_search executes for a query vector of `dims` dimensions. Parameters:
-- $1 query embedding, $2 tsquery the GIN index matches (OR of the query's significant terms),
-- $3 candidates per leg, $4 filter, $5 full-text weight, $6 semantic weight, $7 run the full-text leg,
-- $8 run the vector leg, $9 model or null, $10 rrf_k, $11 match_count, $12 one tsquery per query term,
-- $13 each term's idf, $14 length normalisation b, $15 average chunk length in lexemes.
-- Kept separate so a DBA can PREPARE and EXPLAIN exactly what runs.
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
            -- BM25-style: the sum over query terms of idf * ts_rank(fts, term), divided by the
            -- pivoted length norm 1 - b + b * length / average length.
            -- fts is stored in the heap row (migration 010, storage main), so reading it once per
            -- term costs no TOAST fetch.
            select c.id,
                   (select sum(w.idf * ts_rank(c.fts, w.q))
                    from unnest($12::tsquery[], $13::float8[]) as w(q, idf))
                       / (1 - $14 + $14 * length(c.fts) / $15) as score
            from public.chunks c
            where $7 and c.fts @@ $2 and c.metadata @> $4
            order by score desc, c.id
            limit $3
        ),
        full_text_ranked as (
            select f.id, f.score, row_number() over (order by f.score desc, f.id)::integer as rank_ix
            from full_text f
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
                   f.score::real as full_text_score,
                   coalesce($5 / ($10 + f.rank_ix), 0.0) + coalesce($6 / ($10 + s.rank_ix), 0.0) as rrf_score
            from full_text_ranked f
            full outer join semantic s on s.id = f.id
            order by rrf_score desc, coalesce(f.id, s.id)
            limit $11
        )
        select c.id, c.document_id, d.external_id, d.title, c.position, c.content, c.heading_path,
               c.content_hash, c.content_tokens, c.metadata, c.embedding_model,
               case when $1 is null or c.embedding_dims <> %1$s then null
                    else 1 - (c.embedding <=> $1) end as similarity,
               fu.full_text_rank, fu.vector_rank, fu.full_text_score, fu.rrf_score
        from fused fu
        join public.chunks c on c.id = fu.id
        join public.documents d on d.id = c.document_id
        order by fu.rrf_score desc, fu.id
    $q$, dims);
$fn$;

-- hybrid_search_terms(query_text, common_term_ratio, common_term_min_df, match_df_budget)
--     -> (term_queries, term_idfs, match_query, avg_length, terms)
--
-- What hybrid_search's full-text leg does with a query, before it runs: one tsquery and one idf per
-- distinct query term ($12, $13 of hybrid_search_query), the tsquery the GIN index matches ($2:
-- the OR of the uncommon terms, rarest first while their document frequencies add up to at most
-- match_df_budget; when even the rarest term is in more chunks than the budget, the AND of the two
-- rarest terms not contained in a longer query term, so the rows scored stay bounded on any corpus
-- size), the average
-- chunk length in lexemes ($15), and per term {lexeme, df, idf, common, matched} for reading a plan.
--   select * from hybrid_search_terms('袋鼠 澳洲 动物');
-- idf = ln(1 + (N - df + 0.5) / (df + 0.5)), N and df from corpus_stats / term_stats.
create or replace function public.hybrid_search_terms(
    query_text text,
    common_term_ratio double precision default 0.1,
    common_term_min_df integer default 5000,
    match_df_budget integer default 2000
)
returns table (
    term_queries tsquery[],
    term_idfs double precision[],
    match_query tsquery,
    avg_length double precision,
    terms jsonb
)
language sql
stable
parallel safe
set search_path = public, pg_temp
as $$
    with stats as (
        select coalesce(max(cs.nchunks), 0)::double precision as n_chunks,
               coalesce(max(cs.total_lexemes)::double precision / nullif(max(cs.nchunks), 0), 1)
                   as avg_length
        from public.corpus_stats cs
    ),
    terms as (
        select t.lexeme, coalesce(ts.ndoc, 0) as df
        from unnest(tsvector_to_array(to_tsvector('simple'::regconfig, coalesce(query_text, ''))))
                 as t(lexeme)
        left join public.term_stats ts on ts.lexeme = t.lexeme
    ),
    weighted as (
        select t.lexeme, t.df,
               ln(1 + (greatest(s.n_chunks - t.df, 0) + 0.5) / (t.df + 0.5)) as idf,
               t.df > greatest(common_term_ratio * s.n_chunks, common_term_min_df) as common,
               row_number() over (order by t.df, t.lexeme) as rarity,
               sum(t.df) over (order by t.df, t.lexeme) as cumulative_df
        from terms t, stats s
    ),
    matched as (
        select w.*,
               not w.common and (w.cumulative_df <= match_df_budget or w.rarity = 1) as in_match
        from weighted w
    ),
    conjuncts as (
        -- For a conjunction, a term contained in a longer query term adds nothing (jieba's search
        -- mode indexes 杰克 and 克逊 wherever it indexes 杰克逊): the two rarest of the others.
        select m.lexeme,
               row_number() over (order by m.df, length(m.lexeme) desc, m.lexeme) as rank_in_and
        from matched m
        where not exists (select 1 from matched o
                          where o.lexeme <> m.lexeme and strpos(o.lexeme, m.lexeme) > 0)
    ),
    chosen as (
        -- Even the rarest term is in more chunks than the budget: match the chunks that contain
        -- both of the two rarest such terms. Otherwise, if every term is common, the two rarest match.
        select m.*,
               min(m.df) over () > match_df_budget as conjunctive,
               case when min(m.df) over () > match_df_budget
                    then coalesce(j.rank_in_and <= 2, false)
                    else m.in_match or (not bool_or(m.in_match) over () and m.rarity <= 2)
               end as matches
        from matched m
        left join conjuncts j on j.lexeme = m.lexeme
    )
    select array_agg(public.lexemes_tsquery(array[c.lexeme]) order by c.lexeme),
           array_agg(c.idf order by c.lexeme),
           case when bool_and(c.conjunctive) and count(*) filter (where c.matches) = 2
                then (select public.lexemes_tsquery(array[j1.lexeme])
                             && public.lexemes_tsquery(array[j2.lexeme])
                      from conjuncts j1, conjuncts j2
                      where j1.rank_in_and = 1 and j2.rank_in_and = 2)
                else public.lexemes_tsquery(array_agg(c.lexeme) filter (where c.matches))
           end,
           (select s.avg_length from stats s),
           coalesce(jsonb_agg(jsonb_build_object('lexeme', c.lexeme, 'df', c.df,
                                                 'idf', round(c.idf::numeric, 3), 'common', c.common,
                                                 'matched', c.matches) order by c.rarity), '[]'::jsonb)
    from chosen c
$$;

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
--   filter                 jsonb containment filter on chunk metadata, applied inside each leg
--                          before its limit (metadata @> filter).
--   query_embedding_model  restricts the vector leg to chunks embedded by this model and raises a
--                          clear error when the corpus was embedded by another one.
--   candidate_count        rows each leg fetches before fusion; default max(4 * match_count, 40).
--   ef_search              hnsw.ef_search for this call.
--   filtered_ef_search     hnsw.ef_search when filter is not empty (a selective filter needs a wider
--                          beam to keep recall; see match_documents).
--   common_term_ratio, common_term_min_df
--                          a term in more chunks than both is too common to drive the GIN match.
--   length_norm            b of the length normalisation (0 = none, 1 = full).
--   match_df_budget        the match uses the rarest terms while their document frequencies add up
--                          to at most this; when the rarest alone exceeds it, the chunks containing
--                          both of the two rarest terms. It bounds the rows the leg scores on large
--                          corpora (bench/latency) and changes nothing on small ones.
--
-- EXPLAIN: the statement is built per dimension by hybrid_search_query(dims); PREPARE that text
-- and EXPLAIN ANALYZE EXECUTE it (sql/README.md shows the exact commands).
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
    ef_search integer default 100,
    common_term_ratio double precision default 0.1,
    common_term_min_df integer default 5000,
    length_norm double precision default 0.5,
    match_df_budget integer default 2000,
    filtered_ef_search integer default 200
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
    leg_count integer := coalesce(candidate_count, greatest(match_count * 4, 40));
    use_vector boolean := query_embedding is not null and semantic_weight > 0;
    use_text boolean := false;
    avg_length double precision := 1;
    term_queries tsquery[];
    term_idfs double precision[];
    match_query tsquery;
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
    perform set_config('hnsw.ef_search', greatest(
        case when coalesce(filter, '{}'::jsonb) = '{}'::jsonb then ef_search else filtered_ef_search end,
        leg_count)::text, true);

    return query execute public.hybrid_search_query(coalesce(dims, 1))
    using query_embedding, match_query, leg_count, coalesce(filter, '{}'::jsonb),
          full_text_weight, semantic_weight, use_text, use_vector, query_embedding_model,
          rrf_k::double precision, match_count, term_queries, term_idfs, length_norm, avg_length;
end;
$$;

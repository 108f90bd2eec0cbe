-- match_documents_query(dims) -> text
--
-- The statement match_documents executes for a query vector of `dims` dimensions ($1 query
-- embedding, $2 match_count, $3 filter, $4 model or null, $5 min_similarity). Kept separate so a DBA
-- can PREPARE and EXPLAIN exactly what runs; see sql/README.md.
-- Resolves pgvector's types whether it lives in `extensions` (Supabase) or `public`.
set search_path = public, extensions;

create or replace function public.match_documents_query(dims integer)
returns text
language sql
immutable
parallel safe
set search_path = public, pg_temp
as $fn$
    select format($q$
        with nearest as materialized (
            select c.id, c.embedding::vector(%1$s) <=> $1::vector(%1$s) as distance
            from public.chunks c
            where c.embedding_dims = %1$s
              -- An empty filter folds away: under RLS the planner may not use statistics for the
              -- non-leakproof @>, guesses one row in a hundred passes, and would sort a scan, not use HNSW.
              and ($3 = '{}'::jsonb or c.metadata @> $3)
              and ($4::text is null or c.embedding_model = $4)
            order by c.embedding::vector(%1$s) <=> $1::vector(%1$s)
            limit $2
        ),
        ranked as (
            select n.id, n.distance, row_number() over (order by n.distance, n.id)::integer as rank_ix
            from nearest n
        )
        select c.id, c.document_id, d.external_id, d.title, c.position, c.content, c.heading_path,
               c.content_hash, c.content_tokens, c.metadata, c.embedding_model,
               1 - r.distance as similarity, r.rank_ix as vector_rank
        from ranked r
        join public.chunks c on c.id = r.id
        join public.documents d on d.id = c.document_id
        where 1 - r.distance >= $5
        order by r.rank_ix
    $q$, dims);
$fn$;

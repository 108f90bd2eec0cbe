-- match_documents_query(dims, exact) -> text
--
-- The statement match_documents executes for a query vector of `dims` dimensions ($1 query
-- embedding, $2 match_count, $3 model or null, $4 min_similarity, $5 the scope's size (exact
-- only; its ids before migration 046), $6 - $13 the compiled filter (search_filter()): $6 the path when residual (else null), $7
-- vars, $8 dates, $9 containment, $10 / $11 created_from / created_until, $12 / $13 updated_from /
-- updated_until, $14 / $15 the scope's nearest ids and their distances (exact only), $16 the collections
-- the search is narrowed to (null: none; migration 025)). Kept separate
-- so a DBA can PREPARE and EXPLAIN exactly what runs; see sql/README.md.
-- exact: the admitted scope is small (search_scope_scan() found at most exact_scan_threshold rows and
-- computed the distance of every one, $14 / $15): the nearest match_count of them,
-- read through the primary key (where RLS applies again). Otherwise HNSW with an iterative scan that
-- skips rows the filter rejects.
-- Resolves pgvector's types whether it lives in `extensions` (Supabase) or `public`.
set search_path = public, extensions;

-- Migration 016 added exact (and renumbered the parameters after $2).
drop function if exists public.match_documents_query(integer);

create or replace function public.match_documents_query(dims integer, exact boolean default false)
returns text
language sql
immutable
parallel safe
set search_path = public, pg_temp
as $fn$
    select format($q$
        with nearest as materialized (%2$s
        ),
        ranked as (
            select n.id, n.distance, row_number() over (order by n.distance, n.id)::integer as rank_ix
            from nearest n
        )
        select c.id, c.document_id, d.external_id, d.title, c.position, c.content, c.heading_path,
               c.content_hash, c.content_tokens, c.metadata, c.embedding_model,
               1 - r.distance as similarity, r.rank_ix as vector_rank,
               $5::integer as scope_count
        from ranked r
        join public.chunks c on c.id = r.id
        join public.documents d on d.id = c.document_id
        where 1 - r.distance >= $4
        order by r.rank_ix
    $q$,
    dims,
    case when exact then '
            -- search_scope_scan ranked every admitted row ($14 / $15)
            select n.id, n.distance
            from unnest($14::bigint[], $15::double precision[]) as n(id, distance)
            order by n.distance, n.id
            limit $2'
    else format('
            select c.id, c.embedding::vector(%1$s) <=> $1::vector(%1$s) as distance
            from public.chunks c
            where c.embedding_dims = %1$s
              and ($16::uuid[] is null or c.collection_id = any($16))
              -- No filter folds away: under RLS the planner may not use statistics for the
              -- non-leakproof filter, and a low guess would make it sort a scan instead of using HNSW.
              and ($9 = ''{}''::jsonb or c.metadata @> $9)
              and ($10::timestamptz is null or c.document_created_at >= $10)
              and ($11::timestamptz is null or c.document_created_at <= $11)
              and ($12::timestamptz is null or c.document_updated_at >= $12)
              and ($13::timestamptz is null or c.document_updated_at <= $13)
              and ($6::jsonpath is null or jsonb_path_match(case when $8 then public.search_filter_target(
                       c.metadata, c.document_created_at, c.document_updated_at) else c.metadata end, $6, $7))
              and ($3::text is null or c.embedding_model = $3)
            order by c.embedding::vector(%1$s) <=> $1::vector(%1$s)
            limit $2', dims)
    end);
$fn$;

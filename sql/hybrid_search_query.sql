-- hybrid_search_query(dims, row_security, exact) -> text
--
-- The statement hybrid_search executes for a query vector of `dims` dimensions. Parameters:
-- $1 query embedding, $2 tsquery the GIN index matches (OR of the query's significant terms),
-- $3 candidates per leg, $4 the filter as given (not read since migration 019: the statement uses
-- its compiled form, $17 - $24; kept so that the parameters keep their numbers), $5 full-text weight, $6 semantic weight, $7 run the
-- full-text leg, $8 run the vector leg, $9 model or null, $10 rrf_k, $11 match_count, $12 one tsquery
-- per query term, $13 each term's idf, $14 length normalisation b, $15 average chunk length in lexemes,
-- $16 the scope's chunk ids (exact only, when at most 1,000; null above), $17 - $24 the compiled filter (search_filter()): $17 the
-- path when residual (else null), $18 vars, $19 dates, $20 containment, $21 / $22 created_from /
-- created_until, $23 / $24 updated_from / updated_until, $27 the collections a search is narrowed to
-- (uuid[], null: no narrowing; migration 025), $25 / $26 the scope's nearest ids and their
-- distances (exact only), $28 the scope's size (exact only; migration 046, which returns its ids up to
-- 1,000 only: before it scope_count was cardinality($16)).
-- Kept separate so a DBA can PREPARE and EXPLAIN exactly what runs.
-- row_security: the caller is subject to row-level security (row_security_active('chunks')). Then
-- the full-text leg reads its matches by primary key from hybrid_search_visible_matches(), because
-- under RLS `fts @@ query` cannot use the GIN index (see that function). Without RLS (the backend's
-- own role, service_role on Supabase) the GIN match is read directly.
-- exact: the admitted scope is small (search_scope_scan() found at most exact_scan_threshold, $28,
-- and the distance of every one, $25 / $26): the vector leg takes the
-- nearest of them, the full-text leg tests `fts @@` on each id when there are at most 1,000 of them
-- ($16), else keeps the rows of its match that are in the scope (GIN; under RLS
-- hybrid_search_visible_matches(), which are; without RLS the filter checked on them). Filter and
-- policies are already in $16 (and RLS applies again to the rows read through the primary key).
-- Resolves pgvector's types whether it lives in `extensions` (Supabase) or `public`.
set search_path = public, extensions;

-- Migration 013 added row_security; the one-argument form would make hybrid_search_query(384) ambiguous.
drop function if exists public.hybrid_search_query(integer);
drop function if exists public.hybrid_search_query(integer, boolean);

create or replace function public.hybrid_search_query(
    dims integer, row_security boolean default false, exact boolean default false
)
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
            -- term costs no TOAST fetch. For up to 16 terms the sum is written out (a slot beyond
            -- the query's terms is null and folds to 0 when the call is planned with its values;
            -- the CASE folds too): a subquery per ranked row cost ~3 us of its ~9 (migration 038).
            -- The additions are in the same order, so the scores are the same.
            select c.id,
                   (%5$s)
                       / (1 - $14 + $14 * length(c.fts) / $15) as score
            from %4$s
            where $7 and c.fts @@ $2%2$s
            order by score desc, c.id
            limit $3
        ),
        full_text_ranked as (
            select f.id, f.score, row_number() over (order by f.score desc, f.id)::integer as rank_ix
            from full_text f
        ),
        nearest as materialized (%3$s
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
               fu.full_text_rank, fu.vector_rank, fu.full_text_score, fu.rrf_score,
               $28::integer as scope_count
        from fused fu
        join public.chunks c on c.id = fu.id
        join public.documents d on d.id = c.document_id
        order by fu.rrf_score desc, fu.id
    $q$,
    dims,
    -- the full-text leg's scope. An exact scope of more than 1,000 ids: the match first, then the
    -- ids (migration 033). The match is bounded by match_df_budget, such a scope is not (up to tens of
    -- thousands of ids at 1M chunks), and reading each id by primary key to test `fts @@` cost 8-10 us
    -- per admitted chunk. Up to 1,000 ids they are still read by key: the match costs about the
    -- same whatever the scope (its rows, under RLS the corpus-wide postings of the caller's terms),
    -- and at 1M it was 2-3x slower than the key reads for 104 and 946 ids, 0.6-0.8x for 1,010-10,000.
    -- Whether $16 is null is a constant of the planned call: the other form folds away. Under RLS the
    -- visible matches are already within the scope (the same policies, filter and narrowing that
    -- search_scope_scan counted), so above 1,000 they are not intersected with the scope again: that
    -- made the primary key scan sort and merge both arrays first (~5 ms for 20k ids at 1M chunks;
    -- migration 036). Without RLS the scope above 1,000 is the filter and the narrowing (the policies
    -- admit every row), checked on the match as when the scope is not counted (migration 046; before
    -- it, on the scope's ids).
    case when exact and row_security then '
              and ($16::bigint[] is not null and c.id = any($16)
                   or $16::bigint[] is null
                      and c.id = any(array(select m from public.hybrid_search_visible_matches(
                          $2, $17, $18, $19, $20, $21, $22, $23, $24, $27) m)))'
         when row_security then '
              and c.id = any(array(select m from public.hybrid_search_visible_matches(
                  $2, $17, $18, $19, $20, $21, $22, $23, $24, $27) m))'
         when exact then '
              and ($16::bigint[] is not null and c.id = any($16)
                   or $16::bigint[] is null' || filter_conditions || ')'
         else filter_conditions end,
    -- the vector leg
    case when exact then '
            -- search_scope_scan ranked every admitted row ($25 / $26)
            select n.id, n.distance
            from unnest($25::bigint[], $26::double precision[]) as n(id, distance)
            where $8
            order by n.distance, n.id
            limit $3'
    else format('
            select c.id, c.embedding::vector(%1$s) <=> $1::vector(%1$s) as distance
            from public.chunks c
            where $8 and c.embedding_dims = %1$s%2$s
              and ($9::text is null or c.embedding_model = $9)
            order by c.embedding::vector(%1$s) <=> $1::vector(%1$s)
            limit $3', dims, filter_conditions)
    end,
    -- the full-text leg's rows. Without RLS the filter (or the exact scope's ids) is checked on the
    -- GIN match only (OFFSET 0 keeps the planner from pushing it down): the match is bounded by
    -- match_df_budget, but a filter admitting half the table made the planner AND the match with a
    -- bitmap of the metadata or date index over every admitted row (166 ms of a 177 ms leg at 1M,
    -- {"sel": ["0.5"]}), and an exact scope's ids were each read by primary key.
    case when row_security then 'public.chunks c'
         when exact then '((select * from public.chunks c0 where $7 and $16::bigint[] is not null)
                   union all
                   (select * from public.chunks c0
                    where $7 and $16::bigint[] is null and c0.fts @@ $2 offset 0)) c'
         else '(select * from public.chunks c0 where $7 and c0.fts @@ $2 offset 0) c' end,
    -- the full-text score: the sum over the terms of idf * ts_rank
    'case when cardinality($12::tsquery[]) > 16
                         then (select sum(w.idf * ts_rank(c.fts, w.q))
                               from unnest($12::tsquery[], $13::float8[]) as w(q, idf))
                         else ' || (select string_agg(format('coalesce($13[%1$s] * ts_rank(c.fts, $12[%1$s]), 0)', i),
                                                      ' + ' order by i)
                                    from generate_series(1, 16) as i) || ' end')
    -- the filter and the narrowing: on the HNSW walk's rows, and on the full-text leg's without RLS
    -- (one text since migration 049). No condition folds away on the walk: under RLS the planner may
    -- not use statistics for the non-leakproof filter, and a low guess would make it sort a scan
    -- instead of using HNSW.
    from (select '
              and ($27::uuid[] is null or c.collection_id = any($27))
              and ($20 = ''{}''::jsonb or c.metadata @> $20)
              and ($21::timestamptz is null or c.document_created_at >= $21)
              and ($22::timestamptz is null or c.document_created_at <= $22)
              and ($23::timestamptz is null or c.document_updated_at >= $23)
              and ($24::timestamptz is null or c.document_updated_at <= $24)
              and ($17::jsonpath is null or jsonb_path_match(case when $19 then public.search_filter_target(
                       c.metadata, c.document_created_at, c.document_updated_at) else c.metadata end, $17, $18))'
          as filter_conditions) f;
$fn$;

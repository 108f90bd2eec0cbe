-- hybrid_search_query(dims, row_security, exact) (Citus) -> text
--
-- Single-node counterpart: sql/hybrid_search_query.sql. The same statement (same legs, scores, ranks,
-- fusion and result columns) with what the cluster needs, so that a DBA can PREPARE and EXPLAIN it the
-- same way (docs/scaling.md shows both plans):
--   $27 tenants (uuid[]; null = every tenant): every read of chunks and documents names its tenants,
--       which prunes the shards. One tenant: Citus routes the whole statement to that tenant's shard
--       (a router query: legs, fusion and join run there). Several: each leg runs on every shard in
--       scope with its ORDER BY ... LIMIT pushed down, the coordinator merges the per-shard top lists
--       into the global top list per leg (the same rows one node's leg returns: a leg's top k over the
--       union is within the union of the per-shard top k), ranks and fuses them, and the final rows
--       are read back on the shards by (tenant_id, id).
--   $28 (row_security, not exact): the ids of the caller's full-text matches, computed beforehand by
--       tenant_visible_matches() on the coordinator (single node calls hybrid_search_visible_matches
--       inside the statement; on Citus that call would run on a shard and query other shards).
--   $29 collections (uuid[]; null = not narrowed): the single node's $27, the team collections a search
--       is narrowed to (the row_security leg has it applied in $28 already).
-- The leg's score is term_weighted_rank() (the single node's scalar subquery, as a function: Citus
-- refuses a subquery in the select list of a multi-shard query), and the single node's OFFSET 0 fence
-- is left out (it would make Citus pull the matches to the coordinator before the leg's LIMIT).
-- Every other parameter is hybrid_search_query's: $1 query embedding, $2 match tsquery, $3 candidates
-- per leg, $4 filter, $5 / $6 weights, $7 / $8 run each leg, $9 model, $10 rrf_k, $11 match_count,
-- $12 / $13 term tsqueries and idfs, $14 length norm, $15 average length, $16 exact scope ids,
-- $17 - $24 the compiled filter, $25 / $26 the exact scope's nearest ids and distances.
-- Migration 033 changed only the single node's plan of the exact full-text leg (above 1,000 ids the
-- GIN match behind an OFFSET 0 fence, then the scope's ids; under RLS the visible matches, then the
-- ids; up to 1,000 the ids by key, as here): the same rows. Migration 036 left the ids out of the
-- single node's RLS form above 1,000 ids (the visible matches are already within the scope): the
-- same rows again. Migration 038 wrote the single node's full-text score out for up to 16 terms
-- (the same additions in the same order): the cluster keeps the subquery, and the same scores.
-- The cluster keeps `c.id = any($16)` with the tenants named, since a fence would pull the matches
-- to the coordinator (above). Migration 046 passes the single node's statement the scope's size as
-- $28 and its ids ($16) up to 1,000 only (above that, without RLS, the filter is checked on the match):
-- here $28 is the visible matches and scope_count is cardinality($16), every counted scope's ids.
-- Migration 049 writes the single node's filter conditions once for both legs (the same statement).
set search_path = public, extensions;

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
            select c.id,
                   public.term_weighted_rank(c.fts, $12::tsquery[], $13::float8[])
                       / (1 - $14 + $14 * length(c.fts) / $15) as score
            from public.chunks c
            where $7 and ($27::uuid[] is null or c.tenant_id = any($27)) and c.fts @@ $2%2$s
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
               cardinality($16::bigint[]) as scope_count
        from fused fu
        join public.chunks c on ($27::uuid[] is null or c.tenant_id = any($27)) and c.id = fu.id
        join public.documents d on ($27::uuid[] is null or d.tenant_id = any($27))
                                and d.tenant_id = c.tenant_id and d.id = c.document_id
        order by fu.rrf_score desc, fu.id
    $q$,
    dims,
    -- the full-text leg's scope
    case when exact then '
              and c.id = any($16)'
         when row_security then '
              and c.id = any($28)'
         else '
              and ($29::uuid[] is null or c.collection_id = any($29))
              and ($20 = ''{}''::jsonb or c.metadata @> $20)
              and ($21::timestamptz is null or c.document_created_at >= $21)
              and ($22::timestamptz is null or c.document_created_at <= $22)
              and ($23::timestamptz is null or c.document_updated_at >= $23)
              and ($24::timestamptz is null or c.document_updated_at <= $24)
              and ($17::jsonpath is null or jsonb_path_match(case when $19 then public.search_filter_target(
                       c.metadata, c.document_created_at, c.document_updated_at) else c.metadata end, $17, $18))'
    end,
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
            where $8 and ($27::uuid[] is null or c.tenant_id = any($27)) and c.embedding_dims = %1$s
              and ($29::uuid[] is null or c.collection_id = any($29))
              and ($20 = ''{}''::jsonb or c.metadata @> $20)
              and ($21::timestamptz is null or c.document_created_at >= $21)
              and ($22::timestamptz is null or c.document_created_at <= $22)
              and ($23::timestamptz is null or c.document_updated_at >= $23)
              and ($24::timestamptz is null or c.document_updated_at <= $24)
              and ($17::jsonpath is null or jsonb_path_match(case when $19 then public.search_filter_target(
                       c.metadata, c.document_created_at, c.document_updated_at) else c.metadata end, $17, $18))
              and ($9::text is null or c.embedding_model = $9)
            order by c.embedding::vector(%1$s) <=> $1::vector(%1$s)
            limit $3', dims)
    end);
$fn$;

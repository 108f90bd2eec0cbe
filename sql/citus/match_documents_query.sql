-- match_documents_query(dims, exact) (Citus) -> text
--
-- Single-node counterpart: sql/match_documents_query.sql (parameters $1 - $15 as there, but $5 the
-- scope's ids, where the single node passes their number since migration 046). $16 names
-- the tenants in scope (search_tenants(); null = every tenant), on every read of chunks and documents:
-- one tenant routes the statement to its shard; several run the nearest-neighbour leg on each shard
-- with its ORDER BY ... LIMIT pushed down and merge on the coordinator (sql/citus/hybrid_search_query.sql).
-- $17 is the single node's $16, the team collections the search is narrowed to (null: not narrowed).
set search_path = public, extensions;

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
               cardinality($5::bigint[]) as scope_count
        from ranked r
        join public.chunks c on ($16::uuid[] is null or c.tenant_id = any($16)) and c.id = r.id
        join public.documents d on ($16::uuid[] is null or d.tenant_id = any($16))
                                and d.tenant_id = c.tenant_id and d.id = c.document_id
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
            where ($16::uuid[] is null or c.tenant_id = any($16)) and c.embedding_dims = %1$s
              and ($17::uuid[] is null or c.collection_id = any($17))
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

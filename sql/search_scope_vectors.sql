-- search_scope_vectors(max_rows, query_embedding, embedding_model, k, uid, member_of, collections,
--                      narrowed, ids_limit)
--     -> (ids bigint[], nearest bigint[], distances double precision[], scope_count integer)
--
-- The exact plan of a scope without a filter, in one pass over what it reads (issue 31, migrations
-- 029, 039, 046): the chunks a user may read — public, their own, their collections' (member_of), or,
-- when a search is narrowed to `collections`, those of them in the collections (`narrowed`: the ones
-- among them the caller is a member of) — how many there are (scope_count; more than max_rows means
-- "too large": all four outputs null), their ids when there are at most ids_limit of them (else
-- null), and the k nearest to the query with their cosine distances (of embedding_model when not
-- null), as search_scope_scan returns them. search_scope_scan calls it after its estimate, with the
-- policies' inputs it computed for the calling role; it is no entry point of its own (no API role may
-- execute it: it trusts the uid and memberships it is given).
--
-- What it reads: the scope as three disjoint ranges of chunk_scope_vectors' indexes — the public
-- chunks (a skip scan over collection_id), the caller's own private ones (a skip scan over
-- (collection_id, visibility)), the private ones of the collections. Three steps:
--   1. the count, index-only on chunk_scope_vectors_scope_idx (collection_id, visibility, owner_id),
--      which holds no vector and is deduplicated: ~7 MB at 1M chunks, ~0.06 us an admitted chunk
--      (migration 046). A scope above max_rows stops here, having read no vector;
--   2. each admitted chunk's distance to the query in half precision, index-only on
--      chunk_scope_vectors_idx, (collection_id, visibility, owner_id, id) include (embedding_dims,
--      embedding_model, embedding) (~0.9 kB a 384-d chunk; migration 039), and the
--      scope_pool_size(k) = 1.25 k + 10 nearest by it in a bounded heap sort of the stream. Only a
--      scope of at most ids_limit chunks keeps its ids too (hybrid_search's full-text leg reads them
--      by key): before 046 every scope's ids and distances were kept in a tuplestore read twice, and
--      at 1M a scope of 19,575 chunks took 8.7 ms where the count and the stream take 6.3;
--   3. those chunks' embeddings read by primary key and measured at full precision (scope_nearest()):
--      the k nearest and their exact distances.
-- The function is STABLE: its statements see one snapshot, so the count of step 1 is the scope step 2
-- ranks. Bitmap and sequential scans are off for its statements only (its SET clauses end with it):
-- the index-only scans are the plan even before the visibility map is set after an ingest.
-- Usage:   (as the owner) select scope_count, nearest[1:3]
--          from search_scope_vectors(3000, $1, null, 10, '<user uuid>', '{}', null, null, 1000);
-- EXPLAIN: the statement `scope` below with the select list filled in, after `set enable_seqscan = off;
--          set enable_bitmapscan = off;`.
set search_path = public, extensions;

-- Before 046 it returned no count and every admitted id.
drop function if exists public.search_scope_vectors(integer, vector, text, integer, uuid, uuid[], uuid[], uuid[]);

create or replace function public.search_scope_vectors(
    max_rows integer,
    query_embedding vector,
    embedding_model text,
    k integer,
    uid uuid,
    member_of uuid[],
    collections uuid[],
    narrowed uuid[],
    ids_limit integer,
    out ids bigint[],
    out nearest bigint[],
    out distances double precision[],
    out scope_count integer
)
language plpgsql
stable
set search_path = public, extensions, pg_temp
set plan_cache_mode = force_custom_plan
set enable_seqscan = off
set enable_bitmapscan = off
as $$
declare
    query_half halfvec := public.scope_vector(query_embedding);
    query_dims integer := vector_dims(query_embedding);
    pool bigint[];
    -- %1$s: the select list (none for the count; the id and the half-precision distance to rank), %2$s
    -- a condition on each range's rows (none, or the query's embedding space). $1 collections, $2 uid,
    -- $3 the collections of the third range, $4 max_rows + 1, $5 the query in half precision, $6 its
    -- dimensions, $7 the model or null.
    scope constant text := $q$
        (select %1$s from public.chunk_scope_vectors v
         where v.visibility = 'public' and ($1::uuid[] is null or v.collection_id = any($1))%2$s)
        union all
        (select %1$s from public.chunk_scope_vectors v
         where v.visibility <> 'public' and v.owner_id = $2 and ($1::uuid[] is null or v.collection_id = any($1))%2$s)
        union all
        (select %1$s from public.chunk_scope_vectors v
         where v.visibility <> 'public' and v.owner_id is distinct from $2 and v.collection_id = any($3)%2$s)
        limit $4
    $q$;
    in_space constant text := 'v.embedding_dims = $6 and ($7::text is null or v.embedding_model = $7)';
begin
    execute 'select count(*) from (' || format(scope, '', '') || ') s'
    into scope_count
    using collections, uid, coalesce(narrowed, member_of), max_rows + 1;
    if scope_count > max_rows then
        scope_count := null;
        return;
    end if;
    if scope_count <= ids_limit then
        execute 'with s as materialized ('
                || format(scope, format('v.id, case when %s then v.embedding <=> $5 end as distance', in_space), '')
                || ') '
                'select array(select s.id from s), '
                '       array(select s.id from s where s.distance is not null order by s.distance, s.id limit $8)'
        into ids, pool
        using collections, uid, coalesce(narrowed, member_of), max_rows + 1, query_half, query_dims,
              embedding_model, public.scope_pool_size(k);
    else
        -- the chunks of the query's space only: a condition on the index's columns, cheaper than the
        -- CASE above on every row (0.4 ms of 5.8 at 19,575 chunks)
        execute 'select array(select s.id from ('
                || format(scope, 'v.id, v.embedding <=> $5 as distance', ' and ' || in_space)
                || ') s order by s.distance, s.id limit $8)'
        into pool
        using collections, uid, coalesce(narrowed, member_of), max_rows + 1, query_half, query_dims,
              embedding_model, public.scope_pool_size(k);
    end if;
    select n.nearest, n.distances into nearest, distances
    from public.scope_nearest(pool, query_embedding, query_dims, embedding_model, k) n;
end;
$$;
-- It trusts the caller for uid and the memberships: only search_scope_scan (SECURITY DEFINER, the same
-- owner) calls it.
revoke execute on function public.search_scope_vectors(
    integer, vector, text, integer, uuid, uuid[], uuid[], uuid[], integer
) from public, anon, authenticated, service_role;

-- search_scope_vectors(max_rows, query_embedding, embedding_model, k, uid, member_of, collections,
--                      narrowed) -> (ids bigint[], nearest bigint[], distances double precision[])
--
-- The exact plan of a scope without a filter, in one pass over what it reads (issue 31, migrations
-- 029, 039): the chunks a user may read — public, their own, their collections' (member_of), or, when
-- a search is narrowed to `collections`, those of them in the collections (`narrowed`: the ones among
-- them the caller is a member of) — their ids (at most max_rows + 1: more means "too large", all
-- three outputs null) and the k nearest to the query with their cosine distances (of embedding_model
-- when not null), as search_scope_scan returns them. search_scope_scan calls it after its estimate,
-- with the policies' inputs it computed for the calling role; it is no entry point of its own (no API
-- role may execute it: it trusts the uid and memberships it is given).
--
-- What it reads (migration 039): chunk_scope_vectors_idx, (collection_id, visibility, owner_id, id)
-- include (embedding_dims, embedding_model, embedding) — every chunk's embedding in half precision
-- (~0.9 kB a 384-d chunk against ~1.6 kB at full precision in migration 029's chunks_exact_384_idx,
-- and any dimension up to 1,280 where 029 held the 384-d ones only). Two steps:
--   1. the scope, as three disjoint index-only ranges — the public chunks (a skip scan over
--      collection_id), the caller's own private ones (a skip scan over (collection_id, visibility)),
--      the private ones of the collections — each chunk's distance to the query in half precision, and
--      the scope_pool_size(k) = 1.25 k + 10 nearest by it;
--   2. those chunks' embeddings read by primary key and measured at full precision (scope_nearest()):
--      the k nearest and their exact distances.
-- Bitmap and sequential scans are off for this function's statement only (its SET clauses end with
-- it): the index-only scan is the plan even before the visibility map is set after an ingest.
-- Usage:   (as the owner) select cardinality(ids), nearest[1:3]
--          from search_scope_vectors(3000, $1, null, 10, '<user uuid>', '{}', null, null);
-- EXPLAIN: the statements below with the parameters filled in, after `set enable_seqscan = off;
--          set enable_bitmapscan = off;`.
set search_path = public, extensions;

create or replace function public.search_scope_vectors(
    max_rows integer,
    query_embedding vector,
    embedding_model text,
    k integer,
    uid uuid,
    member_of uuid[],
    collections uuid[],
    narrowed uuid[],
    out ids bigint[],
    out nearest bigint[],
    out distances double precision[]
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
begin
    with s as materialized (
        (select v.id,
                case when v.embedding_dims = query_dims
                          and (search_scope_vectors.embedding_model is null
                               or v.embedding_model = search_scope_vectors.embedding_model)
                     then v.embedding <=> query_half end as distance
         from public.chunk_scope_vectors v
         where v.visibility = 'public'
           and (collections is null or v.collection_id = any(collections)))
        union all
        (select v.id,
                case when v.embedding_dims = query_dims
                          and (search_scope_vectors.embedding_model is null
                               or v.embedding_model = search_scope_vectors.embedding_model)
                     then v.embedding <=> query_half end
         from public.chunk_scope_vectors v
         where v.visibility <> 'public' and v.owner_id = uid
           and (collections is null or v.collection_id = any(collections)))
        union all
        (select v.id,
                case when v.embedding_dims = query_dims
                          and (search_scope_vectors.embedding_model is null
                               or v.embedding_model = search_scope_vectors.embedding_model)
                     then v.embedding <=> query_half end
         from public.chunk_scope_vectors v
         where v.visibility <> 'public' and v.owner_id is distinct from uid
           and v.collection_id = any(coalesce(narrowed, member_of)))
        limit max_rows + 1
    )
    -- the nearest by half precision, selected in the same pass (a bounded heap sort of the scope)
    select array(select s.id from s),
           array(select s.id from s where s.distance is not null
                 order by s.distance, s.id limit public.scope_pool_size(k))
    into ids, pool;
    if cardinality(ids) > max_rows then
        ids := null;
        return;
    end if;
    select n.nearest, n.distances into nearest, distances
    from public.scope_nearest(pool, query_embedding, query_dims, embedding_model, k) n;
end;
$$;
-- It trusts the caller for uid and the memberships: only search_scope_scan (SECURITY DEFINER, the same
-- owner) calls it.
revoke execute on function public.search_scope_vectors(integer, vector, text, integer, uuid, uuid[], uuid[], uuid[])
    from public, anon, authenticated, service_role;

-- search_scope_vectors(max_rows, query_embedding, embedding_model, k, uid, member_of, collections,
--                      narrowed) -> (ids bigint[], nearest bigint[], distances double precision[])
--
-- The exact plan of a scope without a filter, in one pass over what it reads (issue 31, migration
-- 029): the 384-d chunks a user may read — public, their own, their collections' (member_of), or, when
-- a search is narrowed to `collections`, those of them in the collections (`narrowed`: the ones among
-- them the caller is a member of) — their ids (at most max_rows + 1: more means "too large", all
-- three outputs null) and the k nearest to the query with their cosine distances (of embedding_model
-- when not null), as search_scope_scan returns them. search_scope_scan calls it after its estimate,
-- with the policies' inputs it computed for the calling role; it is no entry point of its own (no API
-- role may execute it: it trusts the uid and memberships it is given).
--
-- What it reads: chunks_exact_384_idx, (collection_id, visibility, owner_id, id) include
-- (embedding_model, embedding) for 384-d chunks. The rule is written as three disjoint parts, each an
-- index-only range of that index — the public chunks (a skip scan over collection_id), the caller's own
-- private ones (a skip scan over (collection_id, visibility)), the private ones of the collections —
-- so a tenant's or a collection's vectors are read in id order from consecutive leaf pages (~5 per
-- 8 kB page), where the bounded count and the distances read the heap row, the primary key and the
-- embedding's TOAST index and page for each chunk. Bitmap and sequential scans are off for this
-- function's statement only (its SET clauses end with it): the index-only scan is the plan even
-- before the visibility map is set after an ingest (it then checks the heap page; no TOAST read).
-- Usage:   (as the owner) select cardinality(ids), nearest[1:3]
--          from search_scope_vectors(3000, $1, null, 10, '<user uuid>', '{}', null, null);
-- EXPLAIN: the statement below with the parameters filled in, after `set enable_seqscan = off;
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
begin
    with s as materialized (
        (select c.id,
                case when search_scope_vectors.embedding_model is null
                          or c.embedding_model = search_scope_vectors.embedding_model
                     then c.embedding <=> query_embedding end as distance
         from public.chunks c
         where c.embedding_dims = 384 and c.visibility = 'public'
           and (collections is null or c.collection_id = any(collections)))
        union all
        (select c.id,
                case when search_scope_vectors.embedding_model is null
                          or c.embedding_model = search_scope_vectors.embedding_model
                     then c.embedding <=> query_embedding end
         from public.chunks c
         where c.embedding_dims = 384 and c.visibility <> 'public' and c.owner_id = uid
           and (collections is null or c.collection_id = any(collections)))
        union all
        (select c.id,
                case when search_scope_vectors.embedding_model is null
                          or c.embedding_model = search_scope_vectors.embedding_model
                     then c.embedding <=> query_embedding end
         from public.chunks c
         where c.embedding_dims = 384 and c.visibility <> 'public' and c.owner_id is distinct from uid
           and c.collection_id = any(coalesce(narrowed, member_of)))
        limit max_rows + 1
    )
    -- the k nearest selected once (a bounded heap sort of the scope), both arrays from that one pass
    select array(select s.id from s), coalesce(n.ids, '{}'), coalesce(n.distances, '{}')
    from (select array_agg(t.id order by t.distance, t.id) as ids,
                 array_agg(t.distance order by t.distance, t.id) as distances
          from (select s.id, s.distance from s where s.distance is not null
                order by s.distance, s.id limit greatest(coalesce(k, 0), 0)) t) n
    into ids, nearest, distances;
    if cardinality(ids) > max_rows then
        ids := null;
        nearest := null;
        distances := null;
    end if;
end;
$$;
-- It trusts the caller for uid and the memberships: only search_scope_scan (SECURITY DEFINER, the same
-- owner) calls it.
revoke execute on function public.search_scope_vectors(integer, vector, text, integer, uuid, uuid[], uuid[], uuid[])
    from public, anon, authenticated, service_role;

-- scope_nearest(pool, query_embedding, embedding_dims, embedding_model, k)
--     -> (nearest bigint[], distances double precision[])
--
-- The last step of an exact plan (migration 039): the chunks of `pool` — a scope's nearest by the half-
-- precision copies of chunk_scope_vectors, scope_pool_size(k) of them, or a whole small scope — read by
-- primary key and measured at full precision in the query's space (embedding_dims, and embedding_model
-- when not null): the k nearest, closest first (ties by id), and their exact distances.
-- search_scope_vectors() (a scope without a filter) and search_scope_scan() (a filtered one, step 3)
-- call it; no API role may (it reads every chunk named in pool as its caller, a SECURITY DEFINER
-- function).
--
-- Usage:   (as the owner) select * from scope_nearest('{1,2,3}', $1, 384, null, 2);
set search_path = public, extensions;

create or replace function public.scope_nearest(
    pool bigint[],
    query_embedding vector,
    embedding_dims integer,
    embedding_model text,
    k integer,
    out nearest bigint[],
    out distances double precision[]
)
language sql
stable
set search_path = public, extensions, pg_temp
as $$
    select coalesce(array_agg(n.id order by n.distance, n.id), '{}'),
           coalesce(array_agg(n.distance order by n.distance, n.id), '{}')
    from (
        select c.id, c.embedding <=> query_embedding as distance
        from public.chunks c
        where c.id = any(pool)
          and query_embedding is not null
          and c.embedding_dims = scope_nearest.embedding_dims
          and (scope_nearest.embedding_model is null or c.embedding_model = scope_nearest.embedding_model)
        order by 2, 1
        limit greatest(coalesce(k, 0), 0)
    ) n
$$;
revoke execute on function public.scope_nearest(bigint[], vector, integer, text, integer)
    from public, anon, authenticated, service_role;

-- scope_pool_size(k) -> integer
--
-- How many chunks an exact plan measures again at full precision to return its k nearest (migration
-- 039): 1.25 k + 10, the nearest by the half-precision copies of chunk_scope_vectors. Half precision
-- moves a cosine distance by ~1e-4 (at most 9e-5 on real e5 embeddings), so only near-ties at the k-th
-- place could change sides; the margin covers them (scope_nearest() measures the pool).
--
-- Usage:   select scope_pool_size(30);   -- 48
set search_path = public, extensions;

create or replace function public.scope_pool_size(k integer)
returns integer
language sql
immutable
parallel safe
as $$
    select ceil(1.25 * greatest(coalesce(k, 0), 0))::integer + 10
$$;

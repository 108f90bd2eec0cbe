-- scope_vector(embedding) -> halfvec
--
-- The copy of a chunk's embedding that chunk_scope_vectors holds (migration 039): the same vector in
-- half precision (2 bytes a dimension), up to 1,280 dimensions; null above, where it would not fit a
-- btree index tuple (2,704 bytes at most) beside the scope's keys. search_scope_vectors() ranks a
-- scope by these copies and measures the nearest of them again at full precision, so the distances it
-- returns are the exact ones; half precision only decides which chunks are measured.
--
-- Usage:   select scope_vector('[0.1, -0.2, 0.3]'::vector);
-- EXPLAIN: immutable; written by chunk_scope_vectors_sync().
set search_path = public, extensions;

create or replace function public.scope_vector(embedding vector)
returns halfvec
language sql
immutable
parallel safe
set search_path = public, extensions, pg_temp
as $$
    select case when vector_dims(embedding) <= 1280 then embedding::halfvec end
$$;

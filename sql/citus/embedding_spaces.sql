-- embedding_spaces() (Citus) -> (embedding_dims, embedding_model)
--
-- Single-node counterpart: sql/embedding_spaces.sql (a recursive loose index scan). Citus cannot run a
-- recursive query over a distributed table, so each shard answers a DISTINCT over its
-- chunks_embedding_space_idx and the coordinator merges the few pairs.
set search_path = public, extensions;

create or replace function public.embedding_spaces()
returns table (embedding_dims integer, embedding_model text)
language sql
stable
security definer
set search_path = public, extensions, pg_temp
as $$
    select distinct c.embedding_dims, c.embedding_model
    from public.chunks c
    order by 1, 2
$$;
revoke execute on function public.embedding_spaces() from public, anon;
grant execute on function public.embedding_spaces() to authenticated, service_role;

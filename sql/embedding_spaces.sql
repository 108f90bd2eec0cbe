-- embedding_spaces() -> (embedding_dims, embedding_model, ...)
--
-- The distinct (dimension, model) pairs present in public.chunks, found with a loose index scan
-- over chunks_embedding_space_idx, so it costs a few index probes even at millions of chunks.
-- The retrieval functions use it to refuse a query embedding from a model the corpus was not
-- embedded with (a silent mix of vector spaces returns nonsense).
--
-- SECURITY DEFINER (migration 013): the answer is the corpus's, not the caller's visible share. Which
-- models embedded the chunks is no secret, and under row-level security the loose index scan would
-- have to step over every chunk the caller may not read (no index-only scan) to find the next space.
--
-- Usage:   select * from public.embedding_spaces();
-- EXPLAIN: explain analyze select * from public.embedding_spaces();  -- expect Index Only Scans
-- Resolves pgvector's types whether it lives in `extensions` (Supabase) or `public`.
set search_path = public, extensions;

create or replace function public.embedding_spaces()
returns table (embedding_dims integer, embedding_model text)
language sql
stable
security definer
set search_path = public, extensions, pg_temp
as $$
    with recursive spaces(embedding_dims, embedding_model) as (
        (
            select c.embedding_dims, c.embedding_model
            from public.chunks c
            order by c.embedding_dims, c.embedding_model
            limit 1
        )
        union all
        select nxt.embedding_dims, nxt.embedding_model
        from spaces s
        cross join lateral (
            select c.embedding_dims, c.embedding_model
            from public.chunks c
            where (c.embedding_dims, c.embedding_model) > (s.embedding_dims, s.embedding_model)
            order by c.embedding_dims, c.embedding_model
            limit 1
        ) nxt
    )
    select spaces.embedding_dims, spaces.embedding_model from spaces;
$$;
revoke execute on function public.embedding_spaces() from public, anon;
grant execute on function public.embedding_spaces() to authenticated, service_role;

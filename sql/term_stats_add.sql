-- term_stats_add(lexemes, scopes, deltas, chunk_scopes, chunk_deltas, length_deltas) -> void
--
-- Adds signed counts to the term statistics (migration 018): deltas[i] chunks containing lexemes[i]
-- in visibility scope scopes[i] (visibility_scope()), and per scope chunk_deltas chunks holding
-- length_deltas lexemes in all. Each (lexeme, scope) and each scope must appear once. One upsert per
-- table in (lexeme, scope) order, the order every writer of these tables locks rows in, so concurrent
-- writers wait rather than deadlock; a row whose count reaches zero is deleted, so the statistics
-- keep no trace of a scope's word once its last chunk is gone (erasure).
-- Used by the delete and update triggers of chunks; the insert trigger upserts directly (its counts
-- are all positive, and ingestion is the hot path).
--
-- Usage:   only from the triggers (SECURITY DEFINER; no API role may execute it).
-- EXPLAIN: an index probe of the primary key per element, twice for negative ones.
set search_path = public, extensions;

create or replace function public.term_stats_add(
    lexemes text[],
    scopes uuid[],
    deltas bigint[],
    chunk_scopes uuid[],
    chunk_deltas bigint[],
    length_deltas bigint[]
)
returns void
language plpgsql
security definer
set search_path = public, pg_temp
as $$
begin
    insert into public.term_stats as ts (lexeme, scope, ndoc)
    select g.lexeme, g.scope, g.delta
    from unnest(lexemes, scopes, deltas) as g(lexeme, scope, delta)
    where g.delta <> 0
    order by g.lexeme, g.scope
    on conflict (lexeme, scope) do update set ndoc = ts.ndoc + excluded.ndoc;
    -- Whatever scope a count at zero is in, it goes (another transaction's are not visible to this
    -- one). By lexeme only: one index scan with the array as its key, whatever the planner thinks of
    -- the row counts (a join with the unnested arrays was once planned as a nested loop over them).
    delete from public.term_stats ts
    where ts.lexeme = any(array(select g.lexeme from unnest(lexemes, deltas) as g(lexeme, delta) where g.delta < 0))
      and ts.ndoc <= 0;

    insert into public.corpus_stats as cs (scope, nchunks, total_lexemes)
    select g.scope, g.nchunks, g.total_lexemes
    from unnest(chunk_scopes, chunk_deltas, length_deltas) as g(scope, nchunks, total_lexemes)
    where g.nchunks <> 0 or g.total_lexemes <> 0
    order by g.scope
    on conflict (scope) do update
        set nchunks = cs.nchunks + excluded.nchunks, total_lexemes = cs.total_lexemes + excluded.total_lexemes;
    delete from public.corpus_stats cs where cs.scope = any(chunk_scopes) and cs.nchunks <= 0;
end;
$$;
revoke execute on function public.term_stats_add(text[], uuid[], bigint[], uuid[], bigint[], bigint[])
    from public, anon, authenticated, service_role;

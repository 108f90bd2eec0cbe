-- term_stats_after_insert() -> trigger (statement level, after insert on chunks, new table new_rows)
--
-- Counts the inserted chunks into term_stats (chunks containing each lexeme of fts) and corpus_stats
-- (chunks and lexemes), per visibility scope (visibility_scope(): the public corpus, or the owner of
-- a private chunk), so a user's idf never counts chunks they cannot read (migration 018). A statement
-- trigger with a transition table: one upsert per table for a whole COPY or INSERT ... SELECT.
-- SECURITY DEFINER: every user's ingest updates the statistics, which no API role may read or write.
--
-- Usage:   fires on insert; `select refresh_term_stats()` rebuilds everything from the chunks.
set search_path = public, extensions;

create or replace function public.term_stats_after_insert()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
begin
    -- Ordered upserts: concurrent ingests lock (lexeme, scope) rows in the same order, so they wait,
    -- never deadlock (term_stats_add() keeps the same order).
    insert into public.term_stats as ts (lexeme, scope, ndoc)
    select t.lexeme, public.visibility_scope(n.visibility, n.owner_id, n.collection_id), count(*)
    from new_rows n, unnest(tsvector_to_array(n.fts)) as t(lexeme)
    group by 1, 2
    order by 1, 2
    on conflict (lexeme, scope) do update set ndoc = ts.ndoc + excluded.ndoc;
    insert into public.corpus_stats as cs (scope, nchunks, total_lexemes)
    select public.visibility_scope(n.visibility, n.owner_id, n.collection_id), count(*), coalesce(sum(length(n.fts)), 0)
    from new_rows n
    group by 1
    order by 1
    on conflict (scope) do update
        set nchunks = cs.nchunks + excluded.nchunks, total_lexemes = cs.total_lexemes + excluded.total_lexemes;
    return null;
end;
$$;

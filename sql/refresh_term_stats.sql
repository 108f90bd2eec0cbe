-- refresh_term_stats() -> void
--
-- Rebuilds term_stats and corpus_stats from the chunks, per visibility scope (visibility_scope(): the
-- public corpus, each team collection's chunks, each owner's other private chunks). Needed after a TRUNCATE of chunks, or when the triggers
-- were paused (the bulk loader pauses them during a load and calls this at the end). Reads every
-- chunk once: ts_stat() per scope, each scope's chunks found through chunks_visibility_owner_id_idx.
-- Searches wait for it (TRUNCATE locks both tables until the commit): run it off-peak.
--
-- Usage:   select refresh_term_stats();
set search_path = public, extensions;

create or replace function public.refresh_term_stats()
returns void
language plpgsql
set search_path = public, pg_temp
as $$
begin
    -- TRUNCATE: the rows go at once, and the primary key is rebuilt without dead entries to step over
    -- (a DELETE left them, and the inserts below took twice as long).
    truncate public.term_stats, public.corpus_stats;
    insert into public.term_stats (lexeme, scope, ndoc)
    select st.word, s.scope, st.ndoc
    from (
        select distinct public.visibility_scope(v.visibility, v.owner_id, v.collection_id) as scope
        from (select distinct c.visibility, c.owner_id, c.collection_id from public.chunks c) v
    ) s
    cross join lateral ts_stat(format(
        'select fts from public.chunks where %s',
        case s.scope
            when public.visibility_scope('public', null) then 'visibility = ''public'''
            when public.visibility_scope('private', null)
                then 'visibility = ''private'' and collection_id is null and (owner_id is null or owner_id in ('
                     '''00000000-0000-0000-0000-000000000000'', ''ffffffff-ffff-ffff-ffff-ffffffffffff''))'
            -- a collection's id is never a user's (collections_before_write, migration 024)
            else format('visibility = ''private'' and (collection_id = %1$L or (collection_id is null '
                        'and owner_id = %1$L))', s.scope)
        end)) as st
    order by 1, 2;  -- in key order: the index is written left to right
    insert into public.corpus_stats (scope, nchunks, total_lexemes)
    select public.visibility_scope(c.visibility, c.owner_id, c.collection_id), count(*), coalesce(sum(length(c.fts)), 0)
    from public.chunks c
    group by 1;
end;
$$;
revoke execute on function public.refresh_term_stats() from public, anon, authenticated, service_role;

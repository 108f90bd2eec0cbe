-- term_stats_after_delete() -> trigger (statement level, after delete on chunks, old table old_rows)
--
-- Takes the deleted chunks out of term_stats and corpus_stats, per visibility scope; a lexeme whose
-- count in a scope reaches zero is deleted (term_stats_add()), so deleting a document leaves no trace
-- of its private words in the statistics. SECURITY DEFINER, like the insert trigger.
--
-- Usage:   fires on delete (a document's chunks cascade); `select refresh_term_stats()` rebuilds all.
set search_path = public, extensions;

create or replace function public.term_stats_after_delete()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
    lexemes text[];
    scopes uuid[];
    deltas bigint[];
    chunk_scopes uuid[];
    chunk_deltas bigint[];
    length_deltas bigint[];
begin
    select array_agg(g.lexeme order by g.lexeme, g.scope), array_agg(g.scope order by g.lexeme, g.scope),
           array_agg(-g.n order by g.lexeme, g.scope)
    into lexemes, scopes, deltas
    from (
        select t.lexeme, public.visibility_scope(o.visibility, o.owner_id, o.collection_id) as scope, count(*) as n
        from old_rows o, unnest(tsvector_to_array(o.fts)) as t(lexeme)
        group by 1, 2
    ) g;
    select array_agg(g.scope order by g.scope), array_agg(-g.n order by g.scope), array_agg(-g.l order by g.scope)
    into chunk_scopes, chunk_deltas, length_deltas
    from (
        select public.visibility_scope(o.visibility, o.owner_id, o.collection_id) as scope, count(*) as n,
               coalesce(sum(length(o.fts)), 0) as l
        from old_rows o
        group by 1
    ) g;
    perform public.term_stats_add(lexemes, scopes, deltas, chunk_scopes, chunk_deltas, length_deltas);
    return null;
end;
$$;

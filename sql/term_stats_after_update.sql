-- term_stats_after_update() -> trigger (statement level, after update on chunks, old_rows / new_rows)
--
-- Moves the statistics of updated chunks whose visibility scope or fts changed: a document published
-- or made private again (its chunks change scope through documents_propagate_access), an UPDATE of
-- content_tokens, a chunk moved to another document. Rows whose scope and fts are unchanged (a new
-- embedding, new metadata) cost a join of the transition tables and nothing else. Before migration 018
-- updates were not followed at all; with per-scope statistics a chunk left counted in the public scope
-- after its document turned private would leak its words' counts to every user.
--
-- Usage:   fires on update; `select refresh_term_stats()` rebuilds everything from the chunks.
set search_path = public, extensions;

create or replace function public.term_stats_after_update()
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
    -- A chunk that changed scope or text takes its old counts out (-1) and brings its new ones (+1).
    -- The same set is read twice (lexemes, then chunks per scope); for an update that changes neither
    -- it is empty after one join of the transition tables.
    with moved as (
        select public.visibility_scope(o.visibility, o.owner_id, o.collection_id) as scope, o.fts, -1 as sign
        from old_rows o left join new_rows n on n.id = o.id
        where n.id is null or n.fts is distinct from o.fts
           or public.visibility_scope(n.visibility, n.owner_id, n.collection_id) <> public.visibility_scope(o.visibility, o.owner_id, o.collection_id)
        union all
        select public.visibility_scope(n.visibility, n.owner_id, n.collection_id), n.fts, 1
        from new_rows n left join old_rows o on o.id = n.id
        where o.id is null or n.fts is distinct from o.fts
           or public.visibility_scope(n.visibility, n.owner_id, n.collection_id) <> public.visibility_scope(o.visibility, o.owner_id, o.collection_id)
    ),
    per_scope as (
        select m.scope, sum(m.sign)::bigint as n, coalesce(sum(m.sign * length(m.fts)), 0)::bigint as l
        from moved m
        group by 1
    )
    select array_agg(g.scope order by g.scope), array_agg(g.n order by g.scope), array_agg(g.l order by g.scope)
    into chunk_scopes, chunk_deltas, length_deltas
    from per_scope g;
    if chunk_scopes is null then
        return null;  -- no chunk changed scope or text
    end if;
    with moved as (
        select public.visibility_scope(o.visibility, o.owner_id, o.collection_id) as scope, o.fts, -1 as sign
        from old_rows o left join new_rows n on n.id = o.id
        where n.id is null or n.fts is distinct from o.fts
           or public.visibility_scope(n.visibility, n.owner_id, n.collection_id) <> public.visibility_scope(o.visibility, o.owner_id, o.collection_id)
        union all
        select public.visibility_scope(n.visibility, n.owner_id, n.collection_id), n.fts, 1
        from new_rows n left join old_rows o on o.id = n.id
        where o.id is null or n.fts is distinct from o.fts
           or public.visibility_scope(n.visibility, n.owner_id, n.collection_id) <> public.visibility_scope(o.visibility, o.owner_id, o.collection_id)
    )
    select array_agg(g.lexeme order by g.lexeme, g.scope), array_agg(g.scope order by g.lexeme, g.scope),
           array_agg(g.n order by g.lexeme, g.scope)
    into lexemes, scopes, deltas
    from (
        select t.lexeme, m.scope, sum(m.sign)::bigint as n
        from moved m, unnest(tsvector_to_array(m.fts)) as t(lexeme)
        group by 1, 2
        having sum(m.sign) <> 0
    ) g;
    perform public.term_stats_add(lexemes, scopes, deltas, chunk_scopes, chunk_deltas, length_deltas);
    return null;
end;
$$;

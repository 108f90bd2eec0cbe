-- term_stats_after_update() (Citus) -> trigger
--
-- Single-node counterpart: sql/term_stats_after_update.sql (a chunk whose visibility scope or fts
-- changed moves its counts: -1 in the old scope, +1 in the new). On Citus a chunk never changes
-- tenant (the distribution key), so each tenant's moves are written with tenant_term_stats_add() on
-- the co-located shard, as the insert trigger does (sql/citus/term_stats_after_insert.sql). The join
-- of the transition tables is local: no distributed table is read.
set search_path = public, extensions;

create or replace function public.term_stats_after_update()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
declare
    t record;
begin
    for t in
        with moved as (
            select o.tenant_id, public.visibility_scope(o.visibility, o.owner_id, o.collection_id) as scope, o.fts, -1 as sign
            from old_rows o left join new_rows n on n.id = o.id
            where n.id is null or n.fts is distinct from o.fts
               or public.visibility_scope(n.visibility, n.owner_id, n.collection_id) <> public.visibility_scope(o.visibility, o.owner_id, o.collection_id)
            union all
            select n.tenant_id, public.visibility_scope(n.visibility, n.owner_id, n.collection_id), n.fts, 1
            from new_rows n left join old_rows o on o.id = n.id
            where o.id is null or n.fts is distinct from o.fts
               or public.visibility_scope(n.visibility, n.owner_id, n.collection_id) <> public.visibility_scope(o.visibility, o.owner_id, o.collection_id)
        ),
        per_scope as (
            select g.tenant_id, array_agg(g.scope order by g.scope) as chunk_scopes,
                   array_agg(g.n order by g.scope) as chunk_deltas, array_agg(g.l order by g.scope) as length_deltas
            from (select m.tenant_id, m.scope, sum(m.sign)::bigint as n,
                         coalesce(sum(m.sign * length(m.fts)), 0)::bigint as l
                  from moved m group by 1, 2) g
            group by g.tenant_id
        ),
        per_lexeme as (
            select g.tenant_id, array_agg(g.lexeme order by g.lexeme, g.scope) as lexemes,
                   array_agg(g.scope order by g.lexeme, g.scope) as scopes,
                   array_agg(g.n order by g.lexeme, g.scope) as deltas
            from (select m.tenant_id, l.lexeme, m.scope, sum(m.sign)::bigint as n
                  from moved m, unnest(tsvector_to_array(m.fts)) as l(lexeme)
                  group by 1, 2, 3
                  having sum(m.sign) <> 0) g
            group by g.tenant_id
        )
        select c.tenant_id, s.lexemes, s.scopes, s.deltas, c.chunk_scopes, c.chunk_deltas, c.length_deltas
        from per_scope c left join per_lexeme s on s.tenant_id = c.tenant_id
        order by c.tenant_id
    loop
        perform public.tenant_term_stats_add(t.tenant_id, coalesce(t.lexemes, '{}'), coalesce(t.scopes, '{}'),
                                             coalesce(t.deltas, '{}'), t.chunk_scopes, t.chunk_deltas,
                                             t.length_deltas);
    end loop;
    return null;
end;
$$;
revoke execute on function public.term_stats_after_update() from public, anon, authenticated, service_role;

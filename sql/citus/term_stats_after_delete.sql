-- term_stats_after_delete() (Citus) -> trigger
--
-- Single-node counterpart: sql/term_stats_after_delete.sql; the layout is term_stats_after_insert's
-- (sql/citus/term_stats_after_insert.sql). Takes the deleted chunks out, per tenant; a count that
-- reaches zero is deleted (tenant_term_stats_add()), so a deleted document leaves no trace of its
-- private words (migration 018).
-- The transition table is read only into arrays, which tenant_term_stats_add() writes with statements
-- that name the tenant (routed to the co-located shard on this node).
set search_path = public, extensions;

create or replace function public.term_stats_after_delete()
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
        select c.tenant_id, s.lexemes, s.scopes, s.deltas, c.chunk_scopes, c.chunk_deltas, c.length_deltas
        from (
            select g.tenant_id, array_agg(g.lexeme order by g.lexeme, g.scope) as lexemes,
                   array_agg(g.scope order by g.lexeme, g.scope) as scopes,
                   array_agg(g.n order by g.lexeme, g.scope) as deltas
            from (select n.tenant_id, l.lexeme, public.visibility_scope(n.visibility, n.owner_id, n.collection_id) as scope,
                         -count(*) as n
                  from old_rows n, unnest(tsvector_to_array(n.fts)) as l(lexeme)
                  group by 1, 2, 3) g
            group by g.tenant_id
        ) s
        right join (
            select g.tenant_id, array_agg(g.scope order by g.scope) as chunk_scopes,
                   array_agg(g.n order by g.scope) as chunk_deltas, array_agg(g.l order by g.scope) as length_deltas
            from (select n.tenant_id, public.visibility_scope(n.visibility, n.owner_id, n.collection_id) as scope, -count(*) as n,
                         -coalesce(sum(length(n.fts)), 0)::bigint as l
                  from old_rows n
                  group by 1, 2) g
            group by g.tenant_id
        ) c on c.tenant_id = s.tenant_id
        order by c.tenant_id
    loop
        perform public.tenant_term_stats_add(t.tenant_id, coalesce(t.lexemes, '{}'), coalesce(t.scopes, '{}'),
                                             coalesce(t.deltas, '{}'), t.chunk_scopes, t.chunk_deltas,
                                             t.length_deltas);
    end loop;
    return null;
end;
$$;
revoke execute on function public.term_stats_after_delete() from public, anon, authenticated, service_role;

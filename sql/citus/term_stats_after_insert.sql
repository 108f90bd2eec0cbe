-- term_stats_after_insert() (Citus) -> trigger
--
-- Single-node counterpart: sql/term_stats_after_insert.sql (statistics per visibility scope,
-- migration 018). On Citus the statistics live on the shards of the chunks they count: term_stats
-- (tenant_id, lexeme, scope, ndoc) and corpus_stats (tenant_id, scope, nchunks, total_lexemes),
-- co-located with chunks. A chunk's scope (visibility_scope()) is its tenant, except a private chunk
-- without an owner (scope ffff..., tenant 0000...), so the key holds both. A trigger on a shard may
-- only reach co-located shards on its own node, and the transition table cannot appear in a statement
-- Citus plans: the counts are aggregated per tenant into arrays, and tenant_term_stats_add() writes
-- each tenant's with statements that name it (routed to the local co-located shard).
-- hybrid_search_terms() sums the caller's scopes, as on one node.
set search_path = public, extensions;

create or replace function public.term_stats_after_insert()
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
                         count(*) as n
                  from new_rows n, unnest(tsvector_to_array(n.fts)) as l(lexeme)
                  group by 1, 2, 3) g
            group by g.tenant_id
        ) s
        right join (
            select g.tenant_id, array_agg(g.scope order by g.scope) as chunk_scopes,
                   array_agg(g.n order by g.scope) as chunk_deltas, array_agg(g.l order by g.scope) as length_deltas
            from (select n.tenant_id, public.visibility_scope(n.visibility, n.owner_id, n.collection_id) as scope, count(*) as n,
                         coalesce(sum(length(n.fts)), 0)::bigint as l
                  from new_rows n
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
revoke execute on function public.term_stats_after_insert() from public, anon, authenticated, service_role;

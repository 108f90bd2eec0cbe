-- term_stats_after_insert() (Citus) -> trigger
--
-- Single-node counterpart: migration 006 (one global row per lexeme). On Citus the statistics are kept
-- per tenant, on the tenant's shard: term_stats (tenant_id, lexeme, ndoc) and corpus_stats (tenant_id,
-- nchunks, total_lexemes), co-located with chunks. A trigger on a shard may only reach co-located
-- shards on its own node, and every row it writes has the tenant of a chunk on that shard, so Citus
-- routes each write to a local shard. The transition table cannot appear in a statement Citus plans
-- (it cannot see the tuplestore), so the counts are aggregated into arrays first.
-- hybrid_search_terms() sums the tenants a search reads.
set search_path = public, extensions;

create or replace function public.term_stats_after_insert()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
    tenants uuid[];
    lexemes text[];
    counts bigint[];
    totals bigint[];
begin
    select array_agg(g.tenant_id order by g.tenant_id, g.lexeme), array_agg(g.lexeme order by g.tenant_id, g.lexeme),
           array_agg(g.n order by g.tenant_id, g.lexeme)
    into tenants, lexemes, counts
    from (select r.tenant_id, l.lexeme, count(*) as n
          from new_rows r, unnest(tsvector_to_array(r.fts)) as l(lexeme)
          group by r.tenant_id, l.lexeme) g;
    -- Ordered upserts: concurrent ingests lock lexemes in the same order, so they wait, never deadlock.
    insert into public.term_stats as ts (tenant_id, lexeme, ndoc)
    select * from unnest(tenants, lexemes, counts)
    on conflict (tenant_id, lexeme) do update set ndoc = ts.ndoc + excluded.ndoc;

    select array_agg(g.tenant_id order by g.tenant_id), array_agg(g.n order by g.tenant_id),
           array_agg(g.l order by g.tenant_id)
    into tenants, counts, totals
    from (select r.tenant_id, count(*) as n, coalesce(sum(length(r.fts)), 0)::bigint as l
          from new_rows r group by r.tenant_id) g;
    insert into public.corpus_stats as cs (tenant_id, id, nchunks, total_lexemes)
    select u.tenant_id, true, u.n, u.l from unnest(tenants, counts, totals) as u(tenant_id, n, l)
    on conflict (tenant_id, id) do update
        set nchunks = cs.nchunks + excluded.nchunks, total_lexemes = cs.total_lexemes + excluded.total_lexemes;
    return null;
end;
$$;
revoke execute on function public.term_stats_after_insert() from public, anon, authenticated, service_role;

-- refresh_term_stats() (Citus) -> void
--
-- Single-node counterpart: sql/refresh_term_stats.sql. Rebuilds the statistics per tenant and
-- visibility scope from the chunks (see sql/citus/term_stats_after_insert.sql for the layout). Both
-- INSERT ... SELECT statements group by the distribution column of co-located tables, so Citus runs
-- them on every shard in parallel, without moving a row through the coordinator.
set search_path = public, extensions;

create or replace function public.refresh_term_stats()
returns void
language plpgsql
set search_path = public, pg_temp
as $$
begin
    truncate public.term_stats, public.corpus_stats;
    insert into public.term_stats (tenant_id, lexeme, scope, ndoc)
    select c.tenant_id, l.lexeme, public.visibility_scope(c.visibility, c.owner_id, c.collection_id), count(*)
    from public.chunks c, unnest(tsvector_to_array(c.fts)) as l(lexeme)
    group by 1, 2, 3;
    insert into public.corpus_stats (tenant_id, scope, nchunks, total_lexemes)
    select c.tenant_id, public.visibility_scope(c.visibility, c.owner_id, c.collection_id), count(*), coalesce(sum(length(c.fts)), 0)
    from public.chunks c
    group by 1, 2;
end;
$$;
revoke execute on function public.refresh_term_stats() from public, anon, authenticated, service_role;

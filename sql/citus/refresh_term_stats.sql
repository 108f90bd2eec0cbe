-- refresh_term_stats() (Citus) -> void
--
-- Single-node counterpart: migration 006. Rebuilds the per-tenant statistics from the chunks. Both
-- INSERT ... SELECT statements group by the distribution column of co-located tables, so Citus runs
-- them on every shard in parallel, without moving a row through the coordinator.
set search_path = public, extensions;

create or replace function public.refresh_term_stats()
returns void
language plpgsql
set search_path = public, pg_temp
as $$
begin
    lock table public.term_stats, public.corpus_stats in exclusive mode;
    delete from public.term_stats;
    delete from public.corpus_stats;
    insert into public.term_stats (tenant_id, lexeme, ndoc)
    select c.tenant_id, l.lexeme, count(*)
    from public.chunks c, unnest(tsvector_to_array(c.fts)) as l(lexeme)
    group by c.tenant_id, l.lexeme;
    insert into public.corpus_stats (tenant_id, id, nchunks, total_lexemes)
    select c.tenant_id, true, count(*), coalesce(sum(length(c.fts)), 0)
    from public.chunks c
    group by c.tenant_id;
end;
$$;
revoke execute on function public.refresh_term_stats() from public, anon, authenticated, service_role;

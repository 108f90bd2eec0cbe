-- term_stats_after_delete() (Citus) -> trigger
--
-- Single-node counterpart: migration 006. Per tenant of the deleted chunks (see
-- term_stats_after_insert for the layout): one UPDATE per tenant, each naming its tenant, so Citus
-- routes it to the co-located shard on this node (an UPDATE over every shard would be remote, which a
-- trigger on a shard may not do). The per-lexeme counts travel as one jsonb object.
set search_path = public, extensions;

create or replace function public.term_stats_after_delete()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
    gone record;
begin
    for gone in
        select g.tenant_id, jsonb_object_agg(g.lexeme, g.n) as counts, array_agg(g.lexeme order by g.lexeme) as lexemes
        from (select r.tenant_id, l.lexeme, count(*) as n
              from old_rows r, unnest(tsvector_to_array(r.fts)) as l(lexeme)
              group by r.tenant_id, l.lexeme) g
        group by g.tenant_id
        order by g.tenant_id
    loop
        update public.term_stats ts
        set ndoc = greatest(ts.ndoc - (gone.counts ->> ts.lexeme)::bigint, 0)
        where ts.tenant_id = gone.tenant_id and ts.lexeme = any(gone.lexemes);
    end loop;
    for gone in
        select r.tenant_id, count(*) as n, coalesce(sum(length(r.fts)), 0) as l
        from old_rows r group by r.tenant_id order by r.tenant_id
    loop
        update public.corpus_stats cs
        set nchunks = greatest(cs.nchunks - gone.n, 0), total_lexemes = greatest(cs.total_lexemes - gone.l, 0)
        where cs.tenant_id = gone.tenant_id;
    end loop;
    return null;
end;
$$;
revoke execute on function public.term_stats_after_delete() from public, anon, authenticated, service_role;

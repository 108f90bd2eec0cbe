-- tenant_term_stats_add(tenant, lexemes, scopes, deltas, chunk_scopes, chunk_deltas, length_deltas)
--     (Citus only) -> void
--
-- sql/term_stats_add.sql for one tenant's shard: adds signed counts to term_stats (tenant_id, lexeme,
-- scope) and corpus_stats (tenant_id, scope), deleting a row whose count reaches zero (erasure, as on
-- one node). Every statement names the tenant, so Citus routes it to the tenant's shard, which the
-- chunk triggers calling it (term_stats_after_insert / _delete / _update) find co-located on their own
-- node: a trigger on a shard may not reach another node. Each (lexeme, scope) and each scope once;
-- upserts in (lexeme, scope) order, as every writer of these tables, so concurrent writers wait rather
-- than deadlock.
--
-- Usage:   only from the triggers (SECURITY DEFINER; no API role may execute it).
set search_path = public, extensions;

create or replace function public.tenant_term_stats_add(
    tenant uuid,
    lexemes text[],
    scopes uuid[],
    deltas bigint[],
    chunk_scopes uuid[],
    chunk_deltas bigint[],
    length_deltas bigint[]
)
returns void
language plpgsql
security definer
set search_path = public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
declare
    emptied text[];
begin
    if cardinality(lexemes) > 0 then
        insert into public.term_stats as ts (tenant_id, lexeme, scope, ndoc)
        select tenant, g.lexeme, g.scope, g.delta
        from unnest(lexemes, scopes, deltas) as g(lexeme, scope, delta)
        where g.delta <> 0
        order by g.lexeme, g.scope
        on conflict (tenant_id, lexeme, scope) do update set ndoc = ts.ndoc + excluded.ndoc;
        emptied := array(select g.lexeme from unnest(lexemes, deltas) as g(lexeme, delta) where g.delta < 0);
        if cardinality(emptied) > 0 then
            delete from public.term_stats ts
            where ts.tenant_id = tenant and ts.lexeme = any(emptied) and ts.ndoc <= 0;
        end if;
    end if;
    if cardinality(chunk_scopes) > 0 then
        insert into public.corpus_stats as cs (tenant_id, scope, nchunks, total_lexemes)
        select tenant, g.scope, g.nchunks, g.total_lexemes
        from unnest(chunk_scopes, chunk_deltas, length_deltas) as g(scope, nchunks, total_lexemes)
        where g.nchunks <> 0 or g.total_lexemes <> 0
        order by g.scope
        on conflict (tenant_id, scope) do update
            set nchunks = cs.nchunks + excluded.nchunks, total_lexemes = cs.total_lexemes + excluded.total_lexemes;
        delete from public.corpus_stats cs
        where cs.tenant_id = tenant and cs.scope = any(chunk_scopes) and cs.nchunks <= 0;
    end if;
end;
$$;
revoke execute on function public.tenant_term_stats_add(uuid, text[], uuid[], bigint[], uuid[], bigint[], bigint[])
    from public, anon, authenticated, service_role;

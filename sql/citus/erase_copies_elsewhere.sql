-- erase_copies_elsewhere(gone) (Citus only) -> integer (stored answers rewritten)
--
-- Single-node counterpart: none needed there -- migration 018's trigger on documents rewrites every
-- stored answer that cites a deleted document. On Citus that trigger (documents_erase_copies) runs on
-- the documents' shard and reaches only the messages and research runs of the same tenant; a document
-- other users cite lives in another tenant: the shared corpus (every user's answers cite it) and a team
-- collection's documents (its members' answers cite them; they stay in their owners' tenants). This
-- function, run on the coordinator after such a delete, rewrites the copies on every shard as the
-- trigger does on one: sources, confidence parents and report lines of the gone documents, and a
-- research run's sources, report lines and evidence records (migration 030). One read over every shard
-- finds the tenants holding a citing row (the GIN index on cited_document_ids, migration 018), then one
-- routed UPDATE per tenant and table.
-- Called by backend/db/repositories/documents.py after deleting a public or collection document (only
-- where this function exists, i.e. on a distributed database). Only documents that no longer exist are
-- erased: a caller cannot blank the citations of a live document. SECURITY DEFINER: it rewrites other
-- users' rows, exactly what the single node's trigger (also a definer) does for the same delete.
-- Usage:   select public.erase_copies_elsewhere(array['…']::uuid[]);
set search_path = public, extensions;

create or replace function public.erase_copies_elsewhere(gone uuid[])
returns integer
language plpgsql
volatile
security definer
set search_path = public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
declare
    live uuid[];
    missing text[];
    tenant uuid;
    rewritten integer := 0;
    n integer;
begin
    live := array(select d.id from public.documents d where d.id = any(gone));
    missing := array(select g::text from unnest(gone) g where not (g = any(live)));
    if cardinality(missing) = 0 then
        return 0;
    end if;
    -- The tenants holding a citing row (one read over every shard, each served by the GIN index),
    -- then one UPDATE per tenant and table: routed to its shard (Citus plans the lateral erasure only
    -- in a single-shard statement).
    for tenant in
        select m.tenant_id from public.messages m where public.cited_document_ids(m.sources, m.metadata) && missing
        union
        select r.tenant_id from public.research_runs r where public.cited_document_ids(r.result -> 'sources') && missing
    loop
        update public.messages m
        set sources = e.erased_sources,
            metadata = public.erase_parents(m.metadata, k.kept),
            content = case when m.metadata ? 'research' then public.redact_report(m.content, e.erased)
                           else m.content end
        from public.messages m0
        cross join lateral (
            select array(select i from unnest(public.cited_document_ids(m0.sources, m0.metadata)) as i
                         where not (i = any(missing))) as kept) k
        cross join lateral public.erase_sources(m0.sources, k.kept) e
        where m.tenant_id = tenant and m0.tenant_id = m.tenant_id and m0.id = m.id
          and public.cited_document_ids(m.sources, m.metadata) && missing;
        get diagnostics n = row_count;
        rewritten := rewritten + n;
        update public.research_runs r
        set result = public.erase_run_result(
            r.result, array(select i from unnest(public.cited_document_ids(r.result -> 'sources')) as i
                            where not (i = any(missing))))
        where r.tenant_id = tenant
          and public.cited_document_ids(r.result -> 'sources') && missing;
        get diagnostics n = row_count;
        rewritten := rewritten + n;
    end loop;
    return rewritten;
end;
$$;
revoke execute on function public.erase_copies_elsewhere(uuid[]) from public, anon;
grant execute on function public.erase_copies_elsewhere(uuid[]) to authenticated, service_role;

-- readable_document_ids(ids, reader) (Citus) -> text[]
--
-- Single-node counterpart: migration 018 (of the document ids a stored answer cites, those its owner
-- may read, locked FOR KEY SHARE so that a concurrent delete waits and then erases the copy). On Citus
-- it runs in the BEFORE triggers of messages and research_runs on the row's shard, which may read only
-- the co-located shard of documents: the reader's own tenant. Every document there is the reader's
-- (a tenant's documents are its owner's; the public tenant's, for the service path's reader null, are
-- all readable by it), so those are locked and kept. A document of another tenant -- the shared
-- corpus, another user's -- cannot be looked up from here and is kept as cited: the row's content is
-- its writer's own input, and the deletion of such a document does not reach it (docs/scaling.md,
-- "Erasure on the cluster"). An id that is not a uuid is not readable, as on one node.
set search_path = public, extensions;

create or replace function public.readable_document_ids(ids text[], reader uuid)
returns text[]
language plpgsql
security definer
set search_path = public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
declare
    wanted uuid[] := array(
        select i::uuid from unnest(ids) as i
        where i ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$');
    tenant uuid := public.tenant_key(reader);
begin
    perform 1 from public.documents d
    where d.tenant_id = tenant and d.id = any(wanted)
    for key share of d;
    return array(select w::text from unnest(wanted) as w);
end;
$$;
revoke execute on function public.readable_document_ids(text[], uuid)
    from public, anon, authenticated, service_role;

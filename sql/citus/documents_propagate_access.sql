-- documents_propagate_access() (Citus) -> trigger
--
-- Single-node counterpart: migration 016. A change of a document's access or dates reaches its chunks,
-- found by (tenant_id, document_id): the co-located shard of chunks on the same node.
set search_path = public, extensions;

create or replace function public.documents_propagate_access()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
declare
    created timestamptz := public.document_date(new.metadata, new.created_at);
begin
    -- Ingestion deletes a document's chunks before it rewrites the row, so this finds none then.
    update public.chunks c
    set owner_id = new.owner_id, visibility = new.visibility, collection_id = new.collection_id,
        document_created_at = created, document_updated_at = new.updated_at
    where c.tenant_id = new.tenant_id and c.document_id = new.id
      and (c.owner_id is distinct from new.owner_id or c.visibility is distinct from new.visibility
           or c.collection_id is distinct from new.collection_id
           or c.document_created_at is distinct from created
           or c.document_updated_at is distinct from new.updated_at);
    return null;
end;
$$;
revoke execute on function public.documents_propagate_access() from public, anon, authenticated, service_role;

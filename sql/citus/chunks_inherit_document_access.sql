-- chunks_inherit_document_access() (Citus) -> trigger
--
-- sql/ single-node counterpart: migration 016. A chunk copies its document's owner, visibility and
-- dates whoever writes it. On Citus the trigger runs on the chunk's shard, where only co-located
-- shards on the same node may be read (Citus refuses a remote query from a trigger on a shard): the
-- document is looked up by (tenant_id, id), which is the co-located shard of documents.
set search_path = public, extensions;

create or replace function public.chunks_inherit_document_access()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
    doc record;
begin
    select d.owner_id, d.visibility, d.metadata, d.created_at, d.updated_at into doc
    from public.documents d where d.tenant_id = new.tenant_id and d.id = new.document_id;
    if found then  -- otherwise the foreign key refuses the row with its own message
        new.owner_id := doc.owner_id;
        new.visibility := doc.visibility;
        new.document_created_at := public.document_date(doc.metadata, doc.created_at);
        new.document_updated_at := doc.updated_at;
    end if;
    return new;
end;
$$;
revoke execute on function public.chunks_inherit_document_access() from public, anon, authenticated, service_role;

-- chunks_inherit_document_access() (Citus) -> trigger
--
-- Single-node counterpart: migration 018 (016's copy of the document's owner, visibility and dates,
-- and 018's check that the writer may read the document). On Citus the trigger runs on the chunk's
-- shard, where only co-located shards on the same node may be read (Citus refuses a remote query from
-- a trigger on a shard): the document is looked up by (tenant_id, id), which is the co-located shard of
-- documents. A document of another tenant is not found there, the same error as a missing one (the
-- composite foreign key would refuse it too).
set search_path = public, extensions;

create or replace function public.chunks_inherit_document_access()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
declare
    doc record;
begin
    select d.owner_id, d.visibility, d.collection_id, d.metadata, d.created_at, d.updated_at into doc
    from public.documents d where d.tenant_id = new.tenant_id and d.id = new.document_id;
    if new.document_id is not null
       and (tg_op = 'INSERT' or new.document_id is distinct from old.document_id)
       and (not found
            or not (doc.visibility = 'public' or doc.owner_id = auth.uid()
                    or doc.collection_id = any(public.caller_collection_ids())
                    or public.caller_visibility_scopes() is null)) then
        raise exception 'document % does not exist', new.document_id
            using errcode = 'foreign_key_violation';
    end if;
    if found then
        new.owner_id := doc.owner_id;
        new.visibility := doc.visibility;
        new.collection_id := doc.collection_id;
        new.document_created_at := public.document_date(doc.metadata, doc.created_at);
        new.document_updated_at := doc.updated_at;
    end if;
    return new;
end;
$$;
revoke execute on function public.chunks_inherit_document_access() from public, anon, authenticated, service_role;

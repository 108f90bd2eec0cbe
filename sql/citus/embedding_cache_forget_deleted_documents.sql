-- embedding_cache_forget_deleted_documents() (Citus) -> trigger (statement level, after delete on chunks)
--
-- Single-node counterpart: migration 020 (when a document is deleted, its chunks' entries leave its
-- scope of the embedding cache). On Citus embedding_cache is distributed by scope, co-located with the
-- tenants (a chunk's cache scope, its owner or the public scope, is its tenant), so each tenant's
-- entries are on the shard of the deleted chunks: per tenant, the documents still there are read and
-- the entries deleted with statements that name the tenant (the co-located shards on this node; the
-- transition table cannot appear in a statement Citus plans).
set search_path = public, extensions;

create or replace function public.embedding_cache_forget_deleted_documents()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
declare
    t record;
    remaining uuid[];
    hashes text[];
begin
    for t in
        select g.tenant_id, array_agg(distinct g.document_id) as documents
        from gone g where g.embed_hash is not null group by g.tenant_id order by 1
    loop
        remaining := array(select d.id from public.documents d
                           where d.tenant_id = t.tenant_id and d.id = any(t.documents));
        hashes := array(select distinct g.embed_hash from gone g
                        where g.tenant_id = t.tenant_id and g.embed_hash is not null
                          and not (g.document_id = any(remaining)));
        if cardinality(hashes) > 0 then
            delete from public.embedding_cache e where e.scope = t.tenant_id and e.content_hash = any(hashes);
        end if;
    end loop;
    return null;
end;
$$;
revoke execute on function public.embedding_cache_forget_deleted_documents()
    from public, anon, authenticated, service_role;

-- erase_unreadable_copies(gone, owners) (Citus) -> void
--
-- Single-node counterpart: migration 024 (rewrites the stored answers citing these documents, of
-- `owners` only when given, and the BEFORE triggers of 018 erase what each row's owner may no longer
-- read). On Citus those BEFORE triggers run on the row's shard, where readable_document_ids() sees only
-- that tenant's documents and keeps the rest as cited; the documents that leave a reader's reach here
-- (a member removed from a team collection: collection_members_erase_copies, a trigger on the
-- coordinator's table) are other users' documents, on other shards. So this form decides on the
-- coordinator, per owner of a citing row: a document stays readable when it is public, theirs, or in a
-- collection they are still a member of (the single node's rule), and the rest of `gone` is erased from
-- their messages and research runs directly, on their tenant's shard, as documents_erase_copies does.
-- Runs only on the coordinator (its callers are triggers on coordinator tables).
set search_path = public, extensions;

create or replace function public.erase_unreadable_copies(gone text[], owners uuid[] default null)
returns void
language plpgsql
security definer
set search_path = public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
declare
    wanted uuid[];
    reader uuid;
    member_of uuid[];
    unreadable text[];
begin
    if gone is null or cardinality(gone) = 0 then
        return;
    end if;
    wanted := array(select i::uuid from unnest(gone) as i
                    where i ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$');
    for reader in
        select distinct o.owner_id from (
            select m.owner_id from public.messages m
            where public.cited_document_ids(m.sources, m.metadata) && gone
              and (owners is null or m.owner_id = any(owners))
            union
            select r.owner_id from public.research_runs r
            where public.cited_document_ids(r.result -> 'sources') && gone
              and (owners is null or r.owner_id = any(owners))
        ) o
        where o.owner_id is not null
    loop
        member_of := array(select m.collection_id from public.collection_members m where m.user_id = reader);
        unreadable := array(
            select w::text from unnest(wanted) as w
            except
            select d.id::text from public.documents d
            where d.id = any(wanted)
              and (d.visibility = 'public' or d.owner_id = reader or d.collection_id = any(member_of)));
        if cardinality(unreadable) = 0 then
            continue;
        end if;
        update public.messages m
        set sources = e.erased_sources,
            metadata = public.erase_parents(m.metadata, k.kept),
            content = case when m.metadata ? 'research' then public.redact_report(m.content, e.erased)
                           else m.content end
        from public.messages m0
        cross join lateral (
            select array(select i from unnest(public.cited_document_ids(m0.sources, m0.metadata)) as i
                         where not (i = any(unreadable))) as kept) k
        cross join lateral public.erase_sources(m0.sources, k.kept) e
        where m.tenant_id = public.tenant_key(reader) and m0.tenant_id = m.tenant_id and m0.id = m.id
          and m.owner_id = reader
          and public.cited_document_ids(m.sources, m.metadata) && unreadable;
        update public.research_runs r
        set result = public.erase_run_result(
            r.result, array(select i from unnest(public.cited_document_ids(r.result -> 'sources')) as i
                            where not (i = any(unreadable))))
        where r.tenant_id = public.tenant_key(reader) and r.owner_id = reader
          and public.cited_document_ids(r.result -> 'sources') && unreadable;
    end loop;
end;
$$;
revoke execute on function public.erase_unreadable_copies(text[], uuid[]) from public, anon, authenticated, service_role;

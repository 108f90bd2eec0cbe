-- documents_erase_copies() (Citus) -> trigger (statement level, after delete on documents)
--
-- Single-node counterpart: migration 018 (after documents are deleted, the stored answers citing them
-- are rewritten, and the BEFORE UPDATE triggers erase what they hold of each document that is gone).
-- On Citus the trigger runs on the documents' shard and may write only co-located shards on its node:
-- the messages and research runs of the same tenant, which are the only ones that can cite a private
-- document (a user's documents are readable by that user alone). Their sources, confidence parents and
-- report lines of the gone documents are erased here directly (the BEFORE UPDATE triggers cannot tell
-- a gone document from one on another shard, see readable_document_ids). Copies of a shared-corpus
-- document in users' answers live on their shards and are not erased (docs/scaling.md, "Erasure on
-- the cluster").
set search_path = public, extensions;

-- A research run's result with the sources (and report lines) of the documents not in `kept` erased,
-- as research_runs_sources_readable_by_owner does on one node. PL/pgSQL: Citus refuses a CASE over a
-- stable function (to_jsonb) in the UPDATE of a distributed table, a function call it accepts.
create or replace function public.erase_run_result(result jsonb, kept text[])
returns jsonb
language plpgsql
immutable
parallel safe
as $f$
declare
    cleaned jsonb;
    erased integer[];
begin
    select e.erased_sources, e.erased into cleaned, erased from public.erase_sources(result -> 'sources', kept) e;
    result := jsonb_set(result, '{sources}', cleaned);
    if jsonb_typeof(result -> 'report') = 'string' then
        result := jsonb_set(result, '{report}', to_jsonb(public.redact_report(result ->> 'report', erased)));
    end if;
    -- migration 030: the evidence records of the erased documents too (on one node the BEFORE trigger
    -- does it, with readable_document_ids(), which on Citus cannot see other shards' documents)
    if jsonb_typeof(result -> 'diagnostics') = 'object' then
        result := jsonb_set(result, '{diagnostics}', public.erase_evidence_records(result -> 'diagnostics', kept));
    end if;
    return result;
end;
$f$;

create or replace function public.documents_erase_copies()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
declare
    t record;
begin
    for t in
        select g.tenant_id, array_agg(g.id::text) as gone from gone_documents g group by g.tenant_id order by 1
    loop
        update public.messages m
        set sources = e.erased_sources,
            metadata = public.erase_parents(m.metadata, k.kept),
            content = case when m.metadata ? 'research' then public.redact_report(m.content, e.erased)
                           else m.content end
        from public.messages m0
        cross join lateral (
            select array(select i from unnest(public.cited_document_ids(m0.sources, m0.metadata)) as i
                         where not (i = any(t.gone))) as kept) k
        cross join lateral public.erase_sources(m0.sources, k.kept) e
        where m.tenant_id = t.tenant_id and m0.tenant_id = m.tenant_id and m0.id = m.id
          and public.cited_document_ids(m.sources, m.metadata) && t.gone;
        update public.research_runs r
        set result = public.erase_run_result(
            r.result, array(select i from unnest(public.cited_document_ids(r.result -> 'sources')) as i
                            where not (i = any(t.gone))))
        where r.tenant_id = t.tenant_id
          and public.cited_document_ids(r.result -> 'sources') && t.gone;
    end loop;
    return null;
end;
$$;
revoke execute on function public.documents_erase_copies() from public, anon, authenticated, service_role;

-- 030: deleting a document also erases its text from a research run's evidence records (issue 30).
--
-- A run's diagnostics keep, per section, an evidence record for each passage the report cites: a
-- condensed statement taken from the passage, its source (the document's title) and, for a local
-- passage, its document_id. Like the run's sources (018), a record whose document its owner can no
-- longer read is stored erased: statement and source emptied, url null, "deleted": true. The rows
-- to rewrite are found as before (018's documents_erase_copies: the run's sources cite the document;
-- every cited passage is among them).

-- diagnostics with every evidence record whose document is not in `readable` erased; unchanged when
-- it has none.
create or replace function public.erase_evidence_records(diagnostics jsonb, readable text[])
returns jsonb
language sql
immutable
parallel safe
as $$
    select case
        when jsonb_typeof(diagnostics -> 'sections') is distinct from 'array' then diagnostics
        else jsonb_set(diagnostics, '{sections}', (
            select coalesce(jsonb_agg(case
                when jsonb_typeof(s.value -> 'evidence_records') = 'array' then jsonb_set(
                    s.value, '{evidence_records}', (
                        select coalesce(jsonb_agg(case
                            when r.value ->> 'document_id' is not null
                                 and not ((r.value ->> 'document_id') = any(readable))
                            then r.value || '{"statement": "", "source": "", "url": null, "deleted": true}'::jsonb
                            else r.value end order by r.i), '[]'::jsonb)
                        from jsonb_array_elements(s.value -> 'evidence_records') with ordinality as r(value, i)))
                else s.value end order by s.i), '[]'::jsonb)
            from jsonb_array_elements(diagnostics -> 'sections') with ordinality as s(value, i)))
    end
$$;

create or replace function public.research_runs_sources_readable_by_owner()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
    cited text[] := public.cited_document_ids(new.result -> 'sources');
    readable text[];
    cleaned jsonb;
    erased integer[];
begin
    if cardinality(cited) = 0 then
        return new;
    end if;
    readable := public.readable_document_ids(cited, new.owner_id);
    if cited <@ readable then
        return new;
    end if;
    select e.erased_sources, e.erased into cleaned, erased from public.erase_sources(new.result -> 'sources', readable) e;
    new.result := jsonb_set(new.result, '{sources}', cleaned);
    if jsonb_typeof(new.result -> 'report') = 'string' then
        new.result := jsonb_set(new.result, '{report}',
                                to_jsonb(public.redact_report(new.result ->> 'report', erased)));
    end if;
    if jsonb_typeof(new.result -> 'diagnostics') = 'object' then
        new.result := jsonb_set(new.result, '{diagnostics}',
                                public.erase_evidence_records(new.result -> 'diagnostics', readable));
    end if;
    return new;
end;
$$;

revoke execute on function public.research_runs_sources_readable_by_owner()
from public, anon, authenticated, service_role;

-- 032: deleting a document also erases the words a research run took from the evidence (issue 30).
--
-- Besides the evidence records (030), a run's diagnostics keep words the research steps took from the
-- passages they read: the reflection's entities, candidates, hypotheses and answer, the encyclopedia
-- checks' entity names, the candidate checks' names and queries, the gap queries (and the searches
-- that ran them), a multi-hop step's carried answer and the question it was searched with, the global
-- verify's gaps, hypotheses and pruned directions, and the gap sections the verify planned (their
-- titles and questions, in the diagnostics and in the stored plan). Which passage gave which word is
-- not recorded, so when a document the run cites is no longer readable by its owner, all of these are
-- erased (emptied; the structure and the counts stay), whatever source they came from. What the user
-- typed (the plan's first sections) and what the model wrote (the report) are kept, as before.

-- Each element of `items` that is an object, merged with `patch`; `items` unchanged when not an array.
create or replace function public.jsonb_merge_each(items jsonb, patch jsonb)
returns jsonb
language sql
immutable
parallel safe
as $$
    select case
        when jsonb_typeof(items) is distinct from 'array' then items
        else (
            select coalesce(jsonb_agg(case when jsonb_typeof(e.value) = 'object' then e.value || patch
                                           else e.value end order by e.i), '[]'::jsonb)
            from jsonb_array_elements(items) with ordinality as e(value, i))
    end
$$;

-- A research section's diagnostics without the words taken from evidence (see the header).
create or replace function public.erase_section_words(section jsonb)
returns jsonb
language plpgsql
immutable
parallel safe
as $$
declare
    hop jsonb := section -> 'hop';
    gap_section boolean := jsonb_typeof(section -> 'loop') = 'number' and (section ->> 'loop')::numeric > 0;
    s jsonb := section;
begin
    if jsonb_typeof(s) is distinct from 'object' then
        return s;
    end if;
    s := s || jsonb_build_object(
        'reflections', public.jsonb_merge_each(s -> 'reflections',
            '{"entities": [], "candidates": [], "hypotheses": [], "answer": null}'::jsonb),
        'entity_checks', public.jsonb_merge_each(s -> 'entity_checks', '{"entity": ""}'::jsonb),
        'candidates', public.jsonb_merge_each(s -> 'candidates', '{"name": "", "query": ""}'::jsonb),
        'sufficiency', public.jsonb_merge_each(s -> 'sufficiency', '{"gap_queries": []}'::jsonb));
    s := s - array(select k from unnest(array['reflections', 'entity_checks', 'candidates', 'sufficiency']) k
                   where section -> k is null);
    if jsonb_typeof(hop) = 'object' then
        s := s || jsonb_build_object(
            'hop', hop || jsonb_build_object('entity', null, 'question', coalesce(hop -> 'asked', '""'::jsonb)),
            'question', coalesce(hop -> 'asked', '""'::jsonb));
    end if;
    if gap_section then
        s := s || '{"title": "", "question": ""}'::jsonb;
    end if;
    if jsonb_typeof(s -> 'searches') = 'array' then
        -- The gap and candidate rounds' queries; every query of a hop or a gap section.
        s := jsonb_set(s, '{searches}', (
            select coalesce(jsonb_agg(case
                when jsonb_typeof(q.value) = 'object'
                     and (jsonb_typeof(hop) = 'object' or gap_section
                          or (jsonb_typeof(q.value -> 'round') = 'number' and (q.value ->> 'round')::numeric > 0))
                then q.value || '{"query": ""}'::jsonb
                else q.value end order by q.i), '[]'::jsonb)
            from jsonb_array_elements(s -> 'searches') with ordinality as q(value, i)));
    end if;
    return s;
end;
$$;

-- A run's diagnostics without the words taken from evidence: every section, and the chain.
create or replace function public.erase_research_words(diagnostics jsonb)
returns jsonb
language plpgsql
immutable
parallel safe
as $$
declare
    d jsonb := diagnostics;
    chain jsonb := diagnostics -> 'chain';
begin
    if jsonb_typeof(d) is distinct from 'object' then
        return d;
    end if;
    if jsonb_typeof(d -> 'sections') = 'array' then
        d := jsonb_set(d, '{sections}', (
            select coalesce(jsonb_agg(public.erase_section_words(s.value) order by s.i), '[]'::jsonb)
            from jsonb_array_elements(d -> 'sections') with ordinality as s(value, i)));
    end if;
    if jsonb_typeof(chain) = 'object' then
        chain := chain || jsonb_build_object(
            'verify', public.jsonb_merge_each(chain -> 'verify', '{"gaps": [], "hypotheses": [], "skipped_gaps": []}'::jsonb),
            'pruned', public.jsonb_merge_each(chain -> 'pruned', '{"direction": ""}'::jsonb),
            'hypotheses', public.jsonb_merge_each(chain -> 'hypotheses', '{"claim": ""}'::jsonb));
        if jsonb_typeof(chain -> 'verify') = 'array' then
            chain := jsonb_set(chain, '{verify}', (
                select coalesce(jsonb_agg(case when jsonb_typeof(v.value) = 'object'
                    then v.value || jsonb_build_object('pruned',
                        public.jsonb_merge_each(v.value -> 'pruned', '{"question": ""}'::jsonb))
                    else v.value end order by v.i), '[]'::jsonb)
                from jsonb_array_elements(chain -> 'verify') with ordinality as v(value, i)));
        end if;
        d := jsonb_set(d, '{chain}', chain - array(
            select k from unnest(array['verify', 'pruned', 'hypotheses']) k where diagnostics -> 'chain' -> k is null));
    end if;
    return d;
end;
$$;

-- The stored plan without the gap sections' words (the verify planned them from evidence).
create or replace function public.erase_plan_words(plan jsonb)
returns jsonb
language sql
immutable
parallel safe
as $$
    select case
        when jsonb_typeof(plan -> 'sections') is distinct from 'array' then plan
        else jsonb_set(plan, '{sections}', (
            select coalesce(jsonb_agg(case
                when jsonb_typeof(s.value) = 'object' and jsonb_typeof(s.value -> 'loop') = 'number'
                     and (s.value ->> 'loop')::numeric > 0
                then s.value || '{"title": "", "question": "", "queries": []}'::jsonb
                else s.value end order by s.i), '[]'::jsonb)
            from jsonb_array_elements(plan -> 'sections') with ordinality as s(value, i)))
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
        new.result := jsonb_set(new.result, '{diagnostics}', public.erase_research_words(
            public.erase_evidence_records(new.result -> 'diagnostics', readable)));
    end if;
    if jsonb_typeof(new.plan) = 'object' then
        new.plan := public.erase_plan_words(new.plan);
    end if;
    return new;
end;
$$;

revoke execute on function public.research_runs_sources_readable_by_owner()
from public, anon, authenticated, service_role;

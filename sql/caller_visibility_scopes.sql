-- caller_visibility_scopes() -> uuid[]
--
-- The visibility scopes (visibility_scope()) whose chunks the calling role may read, by the rule of
-- the chunk policies of migration 013: null for every scope (service_role, or the backend's own role,
-- which owns the tables: the CLI and the bulk loader), {public, auth.uid(), the collections the user is a
-- member of (caller_collection_ids(), migration 024)} for authenticated, {} for
-- any other role (anon). The calling role is the one SET ROLE chose (PostgREST,
-- backend/db/identity.py), else the session user, so the answer is the caller's also inside a
-- SECURITY DEFINER function (hybrid_search_terms, the reference checks of migration 018).
--
-- Usage:   select public.caller_visibility_scopes();
-- EXPLAIN: a role lookup and the request claims; no table is read.
set search_path = public, extensions;

create or replace function public.caller_visibility_scopes()
returns uuid[]
language sql
stable
parallel safe
-- No SET clause, every name qualified: so the planner can inline it into the statement that calls it
-- (a search calls it twice; a SET clause would cost a configuration change and a plan per call).
as $$
    select case
        when pg_catalog.pg_has_role(r.caller, 'service_role', 'usage') then null
        when pg_catalog.pg_has_role(r.caller, 'authenticated', 'usage')
            then pg_catalog.array_cat(
                     pg_catalog.array_prepend('00000000-0000-0000-0000-000000000000'::uuid,
                         pg_catalog.array_remove(
                             array[nullif(auth.uid(), '00000000-0000-0000-0000-000000000000'::uuid)], null)),
                     public.caller_collection_ids())
        else '{}'::uuid[]
    end
    from (select coalesce(nullif(pg_catalog.current_setting('role'), 'none'), session_user)::name
              as caller) r
$$;

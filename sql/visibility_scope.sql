-- visibility_scope(visibility, owner_id) -> uuid
--
-- The key of the visibility scope a chunk belongs to, which term_stats and corpus_stats are kept per
-- (migration 018): the nil uuid for the public corpus, the owner's id for a private chunk. A caller's
-- idf is computed from the scopes they may read (caller_visibility_scopes()), so the statistics never
-- count a chunk the caller could not find. A private chunk without an owner, or owned by the nil uuid,
-- goes to the max uuid, a scope no user is given (the service path still counts it).
-- Team collections (documents shared with members) would be one more kind of scope: the collection's
-- id here for a chunk of a collection, and caller_visibility_scopes() adding the collections the
-- caller is a member of; the tables and the search functions stay as they are.
--
-- Usage:   select public.visibility_scope('private', auth.uid());
-- EXPLAIN: immutable SQL, inlined into the statements of the term-statistics triggers.
set search_path = public, extensions;

create or replace function public.visibility_scope(visibility text, owner_id uuid)
returns uuid
language sql
immutable
parallel safe
as $$
    select case
        when visibility = 'public' then '00000000-0000-0000-0000-000000000000'::uuid
        when owner_id is null or owner_id = '00000000-0000-0000-0000-000000000000'::uuid
            then 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid
        else owner_id
    end
$$;

-- visibility_scope(visibility, owner_id, collection_id) -> uuid
--
-- The key of the visibility scope a chunk belongs to, which term_stats and corpus_stats are kept per
-- (migration 018): the nil uuid for the public corpus, the collection's id for a chunk of a team
-- collection (migration 024: every member sums it, no one else does), the owner's id for another
-- private chunk. A caller's
-- idf is computed from the scopes they may read (caller_visibility_scopes()), so the statistics never
-- count a chunk the caller could not find. A private chunk without an owner, or owned by the nil uuid,
-- goes to the max uuid, a scope no user is given (the service path still counts it).
-- A collection's id is drawn by the database (collections_before_write, 024), never a client's: it
-- cannot be made to equal a user's id and open that user's scope to the collection's members.
--
-- Usage:   select public.visibility_scope('private', auth.uid(), null);
-- EXPLAIN: immutable SQL, inlined into the statements of the term-statistics triggers.
set search_path = public, extensions;

-- Before 025 it took (visibility, owner_id).
drop function if exists public.visibility_scope(text, uuid);

create or replace function public.visibility_scope(visibility text, owner_id uuid, collection_id uuid default null)
returns uuid
language sql
immutable
parallel safe
as $$
    select case
        when visibility = 'public' then '00000000-0000-0000-0000-000000000000'::uuid
        when collection_id is not null then collection_id
        when owner_id is null or owner_id = '00000000-0000-0000-0000-000000000000'::uuid
            then 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid
        else owner_id
    end
$$;

-- chunk_scope_keys(visibility, owner_id, collection_id) -> uuid[]
--
-- The keys of the scopes through which a chunk can be read, as the policies of migrations 013 and 024
-- grant it: the nil uuid when it is public, its owner's id, its collection's id (nulls left out).
-- A caller who may read the chunk holds at least one of them: chunk_scope_keys('public', auth.uid(),
-- null) || caller_collection_ids() overlaps it (the converse needs the policy's own test: a private
-- chunk owned by the nil uuid shares the public key).
-- Why it exists: the second column of the GIN index chunks_fts_scope_idx (migration 034), so that a
-- full-text match and the caller's scope are intersected inside one index scan
-- (hybrid_search_visible_matches): GIN steps each term's posting list to the next chunk the scope
-- keys admit, where a bitmap of the match ANDed with the policies' btree indexes decoded the term's
-- postings in every tenant's chunks (a 1 % collection: 18 -> 3.4 ms per search at 1M chunks,
-- docs/benchmarks.md, migration 034).
--
-- Usage:   select public.chunk_scope_keys('private', auth.uid(), null);
--          select count(*) from chunks c where c.fts @@ or_tsquery('袋鼠')
--            and public.chunk_scope_keys(c.visibility, c.owner_id, c.collection_id) && array[...]::uuid[];
-- EXPLAIN: immutable SQL; the same expression as the index's, so the planner matches it to the index.
set search_path = public, extensions;

create or replace function public.chunk_scope_keys(visibility text, owner_id uuid, collection_id uuid)
returns uuid[]
language sql
immutable
parallel safe
as $$
    select pg_catalog.array_remove(
        array[case when visibility = 'public' then '00000000-0000-0000-0000-000000000000'::uuid end,
              owner_id, collection_id],
        null)
$$;

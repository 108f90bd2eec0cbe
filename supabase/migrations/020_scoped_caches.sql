-- 020: the embedding cache and the web search cache scoped per caller, so that no cache tells one user
-- what another ingested or asked (issue 24), and a deleted document's vectors leave the cache.
--
-- * embedding_cache is keyed (scope, content_hash, model). scope is the user whose ingestion wrote the
--   entry (the owner of the private document), or the nil UUID for the shared corpus (the service path
--   and the CLI, whose documents are public). Ingestion looks up only its own scope and the shared one,
--   by primary key, so another user's entries are never read, not even to be skipped: a guess at a
--   private text is never confirmed, neither by chunks_from_cache nor by the time a lookup takes.
-- * chunks.embed_hash records which cache key (sha256 of the embedded text) each chunk was embedded
--   from, so that the database itself can erase a deleted document's entries: a trigger removes them
--   from the document's scope when its chunks go with it, whatever path deletes it (the API, PostgREST,
--   SQL). Chunks written before this migration have no embed_hash; a reembed fills it in.
-- * web_search_cache is keyed per caller (the signed-in user, or the nil UUID for the service path;
--   AUTH_MODE=none's local user is one caller) and no longer keeps the question: query_hash is the
--   sha256 of the caller and the normalised question, which is all a lookup needs.
-- Both tables stay the backend's own (RLS on, no policy or grant for anon/authenticated).
-- Entries written before this migration carry no scope and cannot be attributed to one: they are
-- dropped. The cost is one embedding of a changed document's unchanged chunks (an unchanged document
-- is skipped before any lookup) and one provider call per repeated web question.

set search_path = public, extensions;

-- --- embedding_cache -----------------------------------------------------------------------------------

truncate public.embedding_cache;
alter table public.embedding_cache add column if not exists scope uuid not null;
alter table public.embedding_cache drop constraint if exists embedding_cache_pkey;
-- content_hash before model: erasure removes a text's vectors of every model through the key's prefix.
alter table public.embedding_cache add constraint embedding_cache_pkey primary key (scope, content_hash, model);

comment on table public.embedding_cache is
    'Vectors keyed by (scope, sha256 of the embedded text, embedding model identity). scope: the user '
    'whose ingestion wrote it, or 00000000-0000-0000-0000-000000000000 for the shared (public) corpus. '
    'Read only in the caller''s own scope and the shared one; backend-only.';
comment on column public.embedding_cache.scope is
    'The owner of the private document the text came from; the nil UUID for the public corpus.';

alter table public.chunks add column if not exists embed_hash text;
comment on column public.chunks.embed_hash is
    'sha256 of the text that was embedded (title > headings, then the chunk): its embedding_cache key. '
    'Null for chunks written before migration 020 and not re-embedded since.';

-- Erasure: when a document is deleted, its chunks' entries leave its scope (every model). Chunks that
-- are deleted while their document stays (ingestion replacing a changed document's chunks) are left to
-- ingestion, which forgets the texts the new version no longer uses once the new chunks are written;
-- here the new chunks do not exist yet. An entry another of the owner's documents also uses goes too:
-- that document's next change embeds it again (cost only, and rare: the embedded text includes the title).
create or replace function public.embedding_cache_forget_deleted_documents()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
begin
    delete from public.embedding_cache e
    using (
        select distinct coalesce(g.owner_id, '00000000-0000-0000-0000-000000000000'::uuid) as scope,
               g.embed_hash
        from gone g
        where g.embed_hash is not null
          and not exists (select 1 from public.documents d where d.id = g.document_id)
    ) f
    where e.scope = f.scope and e.content_hash = f.embed_hash;
    return null;
end;
$$;

drop trigger if exists chunks_forget_cached_embeddings on public.chunks;
create trigger chunks_forget_cached_embeddings
    after delete on public.chunks
    referencing old table as gone
    for each statement execute function public.embedding_cache_forget_deleted_documents();

revoke execute on function public.embedding_cache_forget_deleted_documents()
from public, anon, authenticated, service_role;

-- --- web_search_cache ----------------------------------------------------------------------------------

truncate public.web_search_cache;
alter table public.web_search_cache add column if not exists caller uuid not null;
alter table public.web_search_cache drop column if exists query;
alter table public.web_search_cache drop constraint if exists web_search_cache_pkey;
alter table public.web_search_cache add constraint web_search_cache_pkey
    primary key (caller, provider, query_hash, options_hash);

comment on table public.web_search_cache is
    'Web search results per (caller, provider, sha256 of the caller and the normalised query, hash of the '
    'search options), valid until expires_at (WEB_CACHE_TTL_S). A caller reads only its own entries; the '
    'question itself is not kept. Backend-only.';
comment on column public.web_search_cache.caller is
    'The user who asked; 00000000-0000-0000-0000-000000000000 for the service path.';

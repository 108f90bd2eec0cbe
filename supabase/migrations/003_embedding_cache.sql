-- 003: embeddings keyed by (model, content hash), so unchanged text is never embedded twice.

-- pgvector may live in `extensions` (Supabase, fresh installs) or already in `public` (many
-- existing databases); unqualified names resolve in either.
set search_path = public, extensions;

create table if not exists public.embedding_cache (
    model text not null,
    content_hash text not null,
    embedding vector not null,
    created_at timestamptz not null default now(),
    primary key (model, content_hash)
);
alter table public.embedding_cache enable row level security;

comment on table public.embedding_cache is
    'Vectors keyed by (embedding model identity, sha256 of the embedded text). Shared by all owners: '
    'it holds no text, only vectors of text somebody ingested.';

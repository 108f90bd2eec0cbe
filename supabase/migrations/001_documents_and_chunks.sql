-- 001: documents and their chunks (text, jieba tokens, full-text vector, embedding).
--
-- Plain SQL, forward-only: `supabase db push` applies it, and so does `alembic upgrade head`
-- (backend/db/alembic/versions/ reads this very file).

create schema if not exists extensions;
create extension if not exists vector with schema extensions;

-- pgvector may live in `extensions` (Supabase, fresh installs) or already in `public` (many
-- existing databases); unqualified names resolve in either.
set search_path = public, extensions;

create table if not exists public.documents (
    id uuid primary key default gen_random_uuid(),
    owner_id uuid,
    external_id text not null,
    title text not null default '',
    source text not null default '',
    content_hash text not null,
    metadata jsonb not null default '{}'::jsonb,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint documents_owner_external_id_key unique nulls not distinct (owner_id, external_id),
    constraint documents_metadata_is_object check (jsonb_typeof(metadata) = 'object')
);
alter table public.documents enable row level security;

comment on table public.documents is
    'One ingested document. (owner_id, external_id) identifies it; content_hash detects changes.';

create index if not exists documents_owner_id_idx on public.documents (owner_id);
create index if not exists documents_content_hash_idx on public.documents (content_hash);

create table if not exists public.chunks (
    id bigint primary key generated always as identity,
    document_id uuid not null references public.documents (id) on delete cascade,
    owner_id uuid,
    position integer not null,
    content text not null,
    heading_path text[] not null default '{}',
    content_hash text not null,
    content_tokens text not null,
    fts tsvector generated always as (to_tsvector('simple'::regconfig, content_tokens)) stored,
    embedding vector not null,
    embedding_model text not null,
    embedding_dims integer generated always as (vector_dims(embedding)) stored,
    metadata jsonb not null default '{}'::jsonb,
    created_at timestamptz not null default now(),
    constraint chunks_document_position_key unique (document_id, position),
    constraint chunks_metadata_is_object check (jsonb_typeof(metadata) = 'object')
);
alter table public.chunks enable row level security;

comment on column public.chunks.content_tokens is
    'The jieba search-mode segmentation of title, headings and content, space separated, lower-cased.';
comment on column public.chunks.embedding is
    'Unconstrained dimension: Gemini (768) and the local model (384) share the column; '
    'one partial HNSW index per supported dimension serves each.';
comment on column public.chunks.embedding_model is
    'Identity of the model that produced the embedding, e.g. gemini-embedding-001@768.';

create index if not exists chunks_document_id_idx on public.chunks (document_id);
create index if not exists chunks_owner_id_idx on public.chunks (owner_id);
create index if not exists chunks_embedding_space_idx on public.chunks (embedding_dims, embedding_model);
create index if not exists chunks_fts_idx on public.chunks using gin (fts);
create index if not exists chunks_metadata_idx on public.chunks using gin (metadata jsonb_path_ops);

-- One HNSW (cosine) index per supported embedding dimension. The query side casts to the same
-- dimension and repeats the predicate, so the planner matches the partial index.
-- A new dimension ships as a new migration with one more index like these.
create index if not exists chunks_embedding_384_hnsw_idx on public.chunks
    using hnsw ((embedding::vector(384)) vector_cosine_ops)
    with (m = 16, ef_construction = 64)
    where embedding_dims = 384;
create index if not exists chunks_embedding_768_hnsw_idx on public.chunks
    using hnsw ((embedding::vector(768)) vector_cosine_ops)
    with (m = 16, ef_construction = 64)
    where embedding_dims = 768;

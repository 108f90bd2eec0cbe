-- The reference: Supabase's public hybrid-search guide (supabase.com/docs/guides/ai/hybrid-search),
-- table, indexes and function as the guide writes them, with vector(384) for the bundled e5-small
-- model instead of the guide's 512. Installed in its own schema of a benchmark scratch database by
-- bench/common/supabase_ref.py, which loads it with the same chunk texts and embeddings as public.chunks.
--
-- Differences from our public.hybrid_search that this reference keeps on purpose: english
-- to_tsvector on the raw text, websearch_to_tsquery (AND of the words) on the raw, unsegmented
-- query, inner product (<#>) over an HNSW vector_ip_ops index, rrf_k 50, 2 x least(match_count, 30)
-- candidates per leg.
create schema if not exists supabase_ref;
set search_path = supabase_ref, extensions;

create table documents (
  id bigint primary key generated always as identity,
  content text,
  fts tsvector generated always as (to_tsvector('english', content)) stored,
  embedding vector(384)
);

-- Create an index for the full-text search
create index on documents using gin(fts);

-- Create an index for the semantic vector search
create index on documents using hnsw (embedding vector_ip_ops);

create or replace function hybrid_search(
  query_text text,
  query_embedding vector(384),
  match_count int,
  full_text_weight float = 1,
  semantic_weight float = 1,
  rrf_k int = 50
)
returns setof documents
language sql
as $$
with full_text as (
  select
    id,
    -- Note: ts_rank_cd is not indexable but will only rank matches of the where clause
    -- which shouldn't be too big
    row_number() over(order by ts_rank_cd(fts, websearch_to_tsquery(query_text)) desc) as rank_ix
  from
    documents
  where
    fts @@ websearch_to_tsquery(query_text)
  order by rank_ix
  limit least(match_count, 30) * 2
),
semantic as (
  select
    id,
    row_number() over (order by embedding <#> query_embedding) as rank_ix
  from
    documents
  order by rank_ix
  limit least(match_count, 30) * 2
)
select
  documents.*
from
  full_text
  full outer join semantic
    on full_text.id = semantic.id
  join documents
    on coalesce(full_text.id, semantic.id) = documents.id
order by
  coalesce(1.0 / (rrf_k + full_text.rank_ix), 0.0) * full_text_weight +
  coalesce(1.0 / (rrf_k + semantic.rank_ix), 0.0) * semantic_weight
  desc
limit
  least(match_count, 30)
$$;

-- The guide's function rewritten to use its own HNSW index, everything else unchanged (not part of
-- the guide). As published, the semantic leg ranks every row with row_number() over (order by
-- embedding <#> query_embedding): a window over the whole table that no index serves, so each call is
-- a Seq Scan + Sort of every embedding. Here the leg first takes `order by … limit` (what the HNSW
-- index answers), then numbers those rows. bench/latency reports ours against both.
create or replace function hybrid_search_indexed(
  query_text text,
  query_embedding vector(384),
  match_count int,
  full_text_weight float = 1,
  semantic_weight float = 1,
  rrf_k int = 50
)
returns setof documents
language sql
as $$
with full_text as (
  select
    id,
    row_number() over(order by ts_rank_cd(fts, websearch_to_tsquery(query_text)) desc) as rank_ix
  from
    documents
  where
    fts @@ websearch_to_tsquery(query_text)
  order by rank_ix
  limit least(match_count, 30) * 2
),
nearest as (
  select id, embedding <#> query_embedding as distance
  from documents
  order by embedding <#> query_embedding
  limit least(match_count, 30) * 2
),
semantic as (
  select id, row_number() over (order by distance) as rank_ix
  from nearest
)
select
  documents.*
from
  full_text
  full outer join semantic
    on full_text.id = semantic.id
  join documents
    on coalesce(full_text.id, semantic.id) = documents.id
order by
  coalesce(1.0 / (rrf_k + full_text.rank_ix), 0.0) * full_text_weight +
  coalesce(1.0 / (rrf_k + semantic.rank_ix), 0.0) * semantic_weight
  desc
limit
  least(match_count, 30)
$$;

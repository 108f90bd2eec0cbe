-- 027: HNSW indexes for 1024- and 1536-dimension vectors (bge-m3, Qwen text-embedding-v3, jina-v3,
-- Cohere embed-v3 at 1024; OpenAI text-embedding-3-small and Gemini at 1536). Until now only 384 and
-- 768 had one, so a corpus embedded at these sizes was ranked by an exact scan of every chunk the caller
-- may see. Like 001's, each index is partial (embedding_dims = N) over the cast expression the vector
-- leg uses (embedding::vector(N)), so the planner matches it without any change to the search functions.
-- pgvector's HNSW takes vector up to 2000 dimensions: 3072 (text-embedding-3-large) stays exact.
-- On a database that already holds many chunks the build reads the table once (the predicate is false
-- for every chunk of another size) and blocks writes to chunks meanwhile.
create index if not exists chunks_embedding_1024_hnsw_idx on public.chunks
    using hnsw ((embedding::vector(1024)) vector_cosine_ops)
    with (m = 16, ef_construction = 64)
    where embedding_dims = 1024;
create index if not exists chunks_embedding_1536_hnsw_idx on public.chunks
    using hnsw ((embedding::vector(1536)) vector_cosine_ops)
    with (m = 16, ef_construction = 64)
    where embedding_dims = 1536;

-- 012: web search results cached with a TTL, so a repeated question does not pay the provider twice.

create table if not exists public.web_search_cache (
    provider text not null,
    -- sha256 of the normalised query: the key stays small whatever the query's length.
    query_hash text not null,
    query text not null,
    options_hash text not null,
    results jsonb not null,
    fetched_at timestamptz not null default now(),
    expires_at timestamptz not null,
    primary key (provider, query_hash, options_hash),
    constraint web_search_cache_results_is_array check (jsonb_typeof(results) = 'array'),
    constraint web_search_cache_expiry_after_fetch check (expires_at >= fetched_at)
);
-- No policies on purpose: only the backend reads and writes this table, as its owner (which row level
-- security does not restrict); Supabase's anon and authenticated roles see nothing.
alter table public.web_search_cache enable row level security;

create index if not exists web_search_cache_expires_at_idx on public.web_search_cache (expires_at);

comment on table public.web_search_cache is
    'Web search results per (provider, sha256 of the normalised query, hash of the search options), '
    'valid until expires_at (WEB_CACHE_TTL_S). Shared by all users: it holds public web pages only.';

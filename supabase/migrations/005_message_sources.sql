-- 005: the sources (citations) behind each assistant message, so a web app can redraw them later.
-- Each element: {n, chunk_id, document_id, title, heading, snippet, cited, content_hash, why: {...}}.

alter table public.messages add column if not exists sources jsonb not null default '[]'::jsonb;

alter table public.messages drop constraint if exists messages_sources_is_array;
alter table public.messages add constraint messages_sources_is_array check (jsonb_typeof(sources) = 'array');

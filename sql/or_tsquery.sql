-- or_tsquery(tokens text) -> tsquery
--
-- Turns space-separated, already segmented tokens (jieba output for Chinese, words for English)
-- into an OR query over their 'simple' lexemes: a chunk matches when it contains ANY term.
-- An AND query (plainto_tsquery) almost never matches a Chinese question, which is why this exists.
-- Returns NULL when the text has no lexeme.
--
-- Usage:   select public.or_tsquery('尤金 袋鼠 分布');   --> '尤金' | '袋鼠' | '分布'
-- EXPLAIN: immutable and tiny; evaluated once per query.
-- Resolves pgvector's types whether it lives in `extensions` (Supabase) or `public`.
set search_path = public, extensions;

create or replace function public.or_tsquery(tokens text)
returns tsquery
language sql
immutable
parallel safe
set search_path = public, pg_temp
as $$
    select public.lexemes_tsquery(tsvector_to_array(to_tsvector('simple'::regconfig, coalesce(tokens, ''))));
$$;

-- lexemes_tsquery(lexemes text[]) -> tsquery
--
-- The OR of already-normalised lexemes ('a' | 'b'), each quoted so any character is safe; NULL for
-- an empty or NULL array. hybrid_search builds its match query and its per-term queries with it.
-- Resolves pgvector's types whether it lives in `extensions` (Supabase) or `public`.
set search_path = public, extensions;

create or replace function public.lexemes_tsquery(lexemes text[])
returns tsquery
language sql
immutable
parallel safe
set search_path = public, pg_temp
as $$
    select nullif(
        array_to_string(
            array(
                select '''' || replace(replace(lexeme, '\', '\\'), '''', '''''') || ''''
                from unnest(lexemes) as lexeme
                where lexeme <> ''
            ),
            ' | '
        ),
        ''
    )::tsquery;
$$;

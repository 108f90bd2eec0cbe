-- assert_embedding_space(dims, model) -> boolean
--
-- True when chunks embedded in this space exist; false when there are no chunks at all;
-- raises a clear error (SQLSTATE 22023) naming the stored models when the corpus was embedded
-- with something else. model may be null to check the dimension only.
-- Resolves pgvector's types whether it lives in `extensions` (Supabase) or `public`.
set search_path = public, extensions;

create or replace function public.assert_embedding_space(dims integer, model text default null)
returns boolean
language plpgsql
stable
set search_path = public, extensions, pg_temp
as $$
declare
    stored text;
begin
    if exists (
        select 1 from public.embedding_spaces() s
        where s.embedding_dims = dims and (model is null or s.embedding_model = model)
    ) then
        return true;
    end if;
    select string_agg(format('%s (%s dimensions)', s.embedding_model, s.embedding_dims), ', ')
    into stored
    from public.embedding_spaces() s;
    if stored is null then
        return false;
    end if;
    raise exception 'query embedding (% dimensions%) does not match the stored chunks: %',
        dims, coalesce(', model ' || model, ''), stored
        using errcode = '22023',
              hint = 'Embed the query with the model that embedded the corpus, or re-embed the corpus '
                     'with the current model: python -m backend reembed';
end;
$$;

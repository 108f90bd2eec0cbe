-- search_filter_target(metadata, document_created_at, document_updated_at) -> jsonb
--
-- What a compiled search filter (search_filter().path) is evaluated against for one chunk: its
-- metadata, plus its document's dates as epoch seconds under "$created_at" / "$updated_at" (keys a
-- metadata field cannot have: the filter grammar reads $-keys as operators). Inlined by the planner;
-- the retrieval statements only call it when the filter reads a date.
set search_path = public, extensions;

create or replace function public.search_filter_target(
    metadata jsonb, document_created_at timestamptz, document_updated_at timestamptz
)
returns jsonb
language sql
immutable
parallel safe
as $$
    select metadata || jsonb_build_object('$created_at', extract(epoch from document_created_at),
                                          '$updated_at', extract(epoch from document_updated_at));
$$;

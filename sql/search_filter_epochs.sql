-- search_filter_epochs(field, value) -> jsonb
--
-- A date filter's value (an ISO 8601 date or timestamp, or an array of them) as epoch seconds, the
-- form search_filter_target() gives the chunk's document dates. A value without a time zone is UTC.
-- Raises SQLSTATE 22023 naming the field when a value is not a date.
set search_path = public, extensions;

create or replace function public.search_filter_epochs(field text, value jsonb)
returns jsonb
language plpgsql
stable
set search_path = public, pg_temp
set timezone = 'UTC'
as $$
begin
    if jsonb_typeof(value) = 'array' then
        return coalesce((select jsonb_agg(public.search_filter_epochs(field, e)) from jsonb_array_elements(value) e),
                        '[]'::jsonb);
    end if;
    if jsonb_typeof(value) <> 'string' then
        raise exception 'filter %: expected an ISO 8601 date or timestamp, got %', field, value
            using errcode = '22023';
    end if;
    return to_jsonb(extract(epoch from (value #>> '{}')::timestamptz));
exception when invalid_datetime_format or datetime_field_overflow then
    raise exception 'filter %: % is not an ISO 8601 date or timestamp', field, value using errcode = '22023';
end;
$$;

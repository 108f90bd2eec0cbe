-- search_filter(filter) -> (path, vars, dates, containment, created_from, created_until,
--                           updated_from, updated_until)
--
-- Compiles the `filter` argument of hybrid_search / match_documents (one jsonb value) into what
-- the statements evaluate per chunk, once per call:
--   path, vars     a jsonpath predicate and its variables: jsonb_path_match(target, path, vars), where
--                  target is the chunk's metadata (or search_filter_target(...) when `dates`). Values
--                  only ever travel in vars; the path holds operators, quoted field names and $vN.
--   containment    metadata @> containment holds for every chunk the filter admits (built from the
--                  top-level $eq and $contains conditions): lets the GIN index chunks_metadata_idx
--                  narrow the scope before the exact check.
--   created_from .. updated_until
--                  inclusive bounds of the top-level date conditions ($gt / $lt move the bound by
--                  the timestamp resolution, 1 microsecond): the btree indexes on the chunks'
--                  document dates serve them.
--   residual       false when containment and the date bounds say exactly what the filter says (every
--                  top-level condition is a scalar $eq, a $contains or a date comparison): the path
--                  need not be evaluated at all. Evaluating it per row costs a few microseconds, and
--                  ~15 when it reads a date (the target object is built per row).
-- An empty filter ('{}' or null) compiles to a null path: no condition at all.
--
-- The grammar (the API validates it first; see README "Filters"):
--   {"field": value}                      $eq shorthand; an array value is $contains
--   {"field": {"$op": operand, ...}}      several operators on one field all apply
--   {"f1": ..., "f2": ...}                every condition applies
--   {"$and": [filter, ...]}, {"$or": [filter, ...]}, {"$not": filter}
--   $eq, $ne          the field's value equals / does not equal a scalar ($ne: missing counts as
--                     different); an array field is compared with $contains
--   $in, $nin         the value is / is not one of an array of scalars
--   $gt $gte $lt $lte numbers (and dates) compared by value
--   $exists           true: the field is present; false: it is not
--   $contains         an array field holds every given element (a single value: that element)
--   created_at, updated_at
--                     the chunk's document dates (chunks.document_created_at / document_updated_at),
--                     compared to ISO 8601 values; a value without a time zone is UTC.
-- SQLSTATE 22023 names an unknown operator, a malformed node or a value that is not a date.
-- Usage:   select * from search_filter('{"lang": "zh", "created_at": {"$gte": "2025-01-01"}}');
set search_path = public, extensions;

create or replace function public.search_filter(filter jsonb)
returns table (
    path jsonpath,
    vars jsonb,
    dates boolean,
    containment jsonb,
    created_from timestamptz,
    created_until timestamptz,
    updated_from timestamptz,
    updated_until timestamptz,
    residual boolean
)
language plpgsql
stable
set search_path = public, pg_temp
set timezone = 'UTC'  -- a date value without a zone is UTC, as in search_filter_epochs
as $$
declare
    compiled record;
    conjuncts jsonb := '[]'::jsonb;
    pending jsonb;
    node jsonb;
    key text;
    value jsonb;
    op text;
    operand jsonb;
    bound timestamptz;
begin
    containment := '{}'::jsonb;
    residual := false;
    if filter is null or filter = '{}'::jsonb then
        vars := '{}'::jsonb;
        dates := false;
        return next;
        return;
    end if;
    select * into compiled from public.search_filter_path(filter, '{}'::jsonb);
    path := compiled.path::jsonpath;
    vars := compiled.vars;
    dates := compiled.dates;

    -- The top-level conjunction: nested $and are flattened, $or and $not are left to the path.
    pending := jsonb_build_array(filter);
    while jsonb_array_length(pending) > 0 loop
        node := pending -> 0;
        pending := pending - 0;
        for key, value in select e.key, e.value from jsonb_each(node) e loop
            if key = '$and' then
                pending := pending || value;
            elsif left(key, 1) <> '$' then
                conjuncts := conjuncts || jsonb_build_array(jsonb_build_array(key, case
                    when jsonb_typeof(value) = 'object' then value
                    when jsonb_typeof(value) = 'array' then jsonb_build_object('$contains', value)
                    else jsonb_build_object('$eq', value) end));
            else
                residual := true;  -- $or, $not
            end if;
        end loop;
    end loop;

    for key, value in select c ->> 0, c -> 1 from jsonb_array_elements(conjuncts) c loop
        for op, operand in select e.key, e.value from jsonb_each(value) e loop
            if key in ('created_at', 'updated_at') and op in ('$eq', '$gt', '$gte', '$lt', '$lte')
               and jsonb_typeof(operand) = 'string' then
                bound := (operand #>> '{}')::timestamptz;  -- valid: search_filter_path checked it
                if op in ('$eq', '$gt', '$gte') then
                    bound := bound + case when op = '$gt' then interval '1 microsecond' else interval '0' end;
                    if key = 'created_at' then created_from := greatest(created_from, bound);
                    else updated_from := greatest(updated_from, bound); end if;
                end if;
                bound := (operand #>> '{}')::timestamptz;
                if op in ('$eq', '$lt', '$lte') then
                    bound := bound - case when op = '$lt' then interval '1 microsecond' else interval '0' end;
                    if key = 'created_at' then created_until := least(created_until, bound);
                    else updated_until := least(updated_until, bound); end if;
                end if;
            elsif op = '$eq' and jsonb_typeof(operand) in ('string', 'number', 'boolean')
                  and key not in ('created_at', 'updated_at')
                  and (not containment ? key or containment -> key = operand) then
                containment := containment || jsonb_build_object(key, operand);
            elsif op = '$contains' and key not in ('created_at', 'updated_at')
                  and (not containment ? key or jsonb_typeof(containment -> key) = 'array') then
                containment := jsonb_set(containment, array[key],
                    coalesce(containment -> key, '[]'::jsonb)
                    || case when jsonb_typeof(operand) = 'array' then operand else jsonb_build_array(operand) end);
            else
                residual := true;
            end if;
        end loop;
    end loop;
    return next;
end;
$$;

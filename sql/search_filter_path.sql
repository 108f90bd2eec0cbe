-- search_filter_path(node) -> (path, vars, dates): a search filter as jsonpath text and its variables
--
-- The path half of search_filter(), which documents the grammar. `vars` holds the filter's values
-- under generated names ($v1, $v2 ... in the order the path reads them): the path text holds only
-- operators, those names and field names quoted as jsonpath strings, never a value, so a filter
-- cannot change what the path means. `dates` is true when the filter reads created_at or updated_at
-- (the chunk's document dates, which the target object carries as epoch seconds under
-- "$created_at" / "$updated_at").
-- Linear in the size of the filter (migration 019; it was quadratic in the number of values, ~21 s of
-- CPU for 6,400 of them): one walk with an explicit stack, the path's pieces and the values appended
-- to arrays in place and joined once at the end. Each level of nesting still copies its subtree once
-- (jsonb_each / jsonb_array_elements), so the cost is size x depth, and the API nests at most 6 deep.
-- Raises SQLSTATE 22023 (invalid_parameter_value) naming what it does not understand.
-- Usage:   select * from search_filter_path('{"$or": [{"lang": {"$eq": "zh"}}, {"tags": ["a"]}]}');
set search_path = public, extensions;

-- Before 019 it was recursive and threaded vars through every call (inout), copying them each time.
drop function if exists public.search_filter_path(jsonb, jsonb);

create or replace function public.search_filter_path(node jsonb, out path text, out vars jsonb, out dates boolean)
language plpgsql
stable
set search_path = public, pg_temp
as $$
declare
    -- The work still to do, last in first out: ('node', a filter object), ('field', key + its
    -- condition) or ('text', a piece of the path). Popped items are left in place and overwritten.
    kinds text[] := '{}';
    nodes jsonb[] := '{}';
    texts text[] := '{}';
    top integer := 0;
    pieces text[] := '{}';  -- the path, in order
    vals jsonb[] := '{}';   -- the values, in order: $v1 is vals[1]
    nvals integer := 0;     -- cardinality(vals) would flatten the array on every call
    kind text;
    item jsonb;
    key text;
    value jsonb;
    op text;
    operand jsonb;
    element jsonb;
    first boolean;
    accessor text;
    is_date boolean;
    name text;
    leaf text;
    i integer;
begin
    dates := false;
    top := 1;
    kinds[1] := 'node';
    nodes[1] := node;
    while top > 0 loop
        kind := kinds[top];
        leaf := texts[top];
        item := case when kind <> 'text' then nodes[top] end;  -- a stale node under a text item is not copied
        top := top - 1;
        if kind = 'text' then
            pieces := array_append(pieces, leaf);
        elsif kind = 'node' then
            if item is null or jsonb_typeof(item) <> 'object' then
                raise exception 'a filter must be a JSON object, got %', coalesce(item::text, 'null')
                    using errcode = '22023';
            end if;
            if item = '{}'::jsonb then
                raise exception 'a filter inside $and / $or / $not must not be empty' using errcode = '22023';
            end if;
            -- Its conditions joined by &&, in key order: pushed in reverse, so they pop in order.
            first := true;
            for key, value in select e.key, e.value from jsonb_each(item) e order by e.key desc loop
                if not first then
                    top := top + 1; kinds[top] := 'text'; texts[top] := ' && ';
                end if;
                first := false;
                if key in ('$and', '$or') then
                    if jsonb_typeof(value) <> 'array' or jsonb_array_length(value) = 0 then
                        raise exception 'filter %: expected a non-empty array of filters', key
                            using errcode = '22023';
                    end if;
                    -- ((a) && (b) && (c)), pushed from the end
                    top := top + 1; kinds[top] := 'text'; texts[top] := '))';
                    for element in select e.value from jsonb_array_elements(value) with ordinality e
                                   order by e.ordinality desc loop
                        if kinds[top] = 'node' then
                            top := top + 1; kinds[top] := 'text';
                            texts[top] := case key when '$and' then ') && (' else ') || (' end;
                        end if;
                        top := top + 1; kinds[top] := 'node'; nodes[top] := element;
                    end loop;
                    top := top + 1; kinds[top] := 'text'; texts[top] := '((';
                elsif key = '$not' then
                    top := top + 1; kinds[top] := 'text'; texts[top] := ')';
                    top := top + 1; kinds[top] := 'node'; nodes[top] := value;
                    top := top + 1; kinds[top] := 'text'; texts[top] := '!(';
                elsif left(key, 1) = '$' then
                    raise exception 'filter operator % is not supported here', key using errcode = '22023';
                else
                    top := top + 1; kinds[top] := 'field'; texts[top] := key; nodes[top] := value;
                end if;
            end loop;
        else
            -- A field's conditions, joined by &&; each value becomes the next variable.
            key := leaf;
            value := item;
            is_date := key in ('created_at', 'updated_at');
            dates := dates or is_date;
            -- to_jsonb(text)::text is a JSON string literal, which jsonpath reads as a quoted key.
            accessor := '$.' || to_jsonb(case when is_date then '$' || key else key end)::text;
            if jsonb_typeof(value) = 'object' then
                if value = '{}'::jsonb then
                    raise exception 'filter %: give an operator, e.g. {"$eq": ...}', key using errcode = '22023';
                end if;
            elsif jsonb_typeof(value) = 'array' then
                value := jsonb_build_object('$contains', value);  -- {"tags": ["a", "b"]}: holds both
            else
                value := jsonb_build_object('$eq', value);
            end if;
            first := true;
            for op, operand in select e.key, e.value from jsonb_each(value) e order by e.key loop
                if not first then
                    pieces := array_append(pieces, ' && ');
                end if;
                first := false;
                if op in ('$in', '$nin', '$contains') and jsonb_typeof(operand) <> 'array' then
                    operand := case when op = '$contains' then jsonb_build_array(operand) else null end;
                    if operand is null then
                        raise exception 'filter %: % expects an array', key, op using errcode = '22023';
                    end if;
                end if;
                if op = '$exists' then
                    if jsonb_typeof(operand) <> 'boolean' then
                        raise exception 'filter %: $exists expects true or false', key using errcode = '22023';
                    end if;
                    pieces := array_append(pieces, case when operand = 'true'::jsonb then 'exists(' else '!exists(' end
                                                   || accessor || ')');
                    continue;
                end if;
                if is_date then
                    operand := public.search_filter_epochs(key, operand);
                end if;
                vals := array_append(vals, operand);
                nvals := nvals + 1;
                name := '$v' || nvals;
                -- $eq / $in compare a single value: an array field needs $contains.
                leaf := case op
                    when '$eq' then '(' || accessor || '.type() != "array" && ' || accessor || ' == ' || name || ')'
                    when '$ne' then '!(' || accessor || '.type() != "array" && ' || accessor || ' == ' || name || ')'
                    when '$in' then '(' || accessor || '.type() != "array" && ' || accessor || ' == ' || name || '[*])'
                    when '$nin' then '!(' || accessor || '.type() != "array" && ' || accessor || ' == ' || name || '[*])'
                    when '$gt' then accessor || ' > ' || name
                    when '$gte' then accessor || ' >= ' || name
                    when '$lt' then accessor || ' < ' || name
                    when '$lte' then accessor || ' <= ' || name
                    when '$contains' then '(' || accessor || '.type() == "array"' end;
                if leaf is null then
                    raise exception 'filter %: operator % is not supported', key, op using errcode = '22023';
                end if;
                pieces := array_append(pieces, leaf);
                if op = '$contains' then
                    for i in 0 .. jsonb_array_length(operand) - 1 loop
                        pieces := array_append(pieces, ' && ' || accessor || ' == ' || name || '[' || i || ']');
                    end loop;
                    pieces := array_append(pieces, ')');
                end if;
            end loop;
        end if;
    end loop;
    path := array_to_string(pieces, '');
    vars := coalesce((select jsonb_object_agg('v' || u.i, u.v) from unnest(vals) with ordinality u(v, i)),
                     '{}'::jsonb);
end;
$$;

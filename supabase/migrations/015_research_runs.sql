-- 015: deep research runs (POST /research). One row per run: its status, the plan, the budget it
-- had and what it used, timings, and the final result or the error, so a client that lost the event
-- stream can read the outcome by the run's id. A run belongs to one user, like a conversation.

set search_path = public, extensions;

create table if not exists public.research_runs (
    id uuid primary key default gen_random_uuid(),
    owner_id uuid default auth.uid(),
    conversation_id uuid references public.conversations (id) on delete set null,
    message_id uuid references public.messages (id) on delete set null,
    question text not null,
    preset text not null,
    status text not null default 'running',
    partial boolean not null default false,
    -- Why the report is partial, or why the run failed or was cancelled: budget names
    -- (deadline, max_model_calls, max_tokens, max_searches), "client disconnected", an error.
    stop_reasons text[] not null default '{}',
    options jsonb not null default '{}'::jsonb,
    plan jsonb,
    budget jsonb not null default '{}'::jsonb,
    timings jsonb not null default '{}'::jsonb,
    result jsonb,
    error jsonb,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    finished_at timestamptz,
    constraint research_runs_status_check
        check (status in ('running', 'completed', 'failed', 'cancelled')),
    constraint research_runs_preset_check check (preset in ('lite', 'comprehensive')),
    constraint research_runs_finished_when_not_running
        check ((status = 'running') = (finished_at is null))
);
alter table public.research_runs enable row level security;

comment on table public.research_runs is
    'Deep research runs: status, plan, budget limits and use, timings, and the result (the same JSON '
    'POST /research answers) or the error. Readable by their owner only.';
comment on column public.research_runs.budget is
    '{"limits": {deadline_s, max_model_calls, max_tokens, max_searches}, "used": {...}, "exhausted": [...]}';

create index if not exists research_runs_owner_id_idx on public.research_runs (owner_id, created_at desc);
create index if not exists research_runs_conversation_id_idx on public.research_runs (conversation_id);
create index if not exists research_runs_message_id_idx on public.research_runs (message_id);

-- (select auth.uid()) is evaluated once per statement, not once per row (Supabase's RLS guide).
drop policy if exists "Users can manage their own research runs" on public.research_runs;
create policy "Users can manage their own research runs" on public.research_runs
    for all to authenticated
    using (owner_id = (select auth.uid()))
    with check (owner_id = (select auth.uid()));
drop policy if exists "The service role can manage every research run" on public.research_runs;
create policy "The service role can manage every research run" on public.research_runs
    for all to service_role using (true) with check (true);

-- Supabase's default privileges give anon and authenticated ALL on new tables: start from nothing.
revoke all on table public.research_runs from anon, authenticated, service_role;
grant select, insert, update, delete on table public.research_runs to authenticated, service_role;

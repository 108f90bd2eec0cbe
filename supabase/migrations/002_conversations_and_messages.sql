-- 002: chat conversations and their messages.

create table if not exists public.conversations (
    id uuid primary key default gen_random_uuid(),
    owner_id uuid,
    title text not null default '',
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);
alter table public.conversations enable row level security;

create index if not exists conversations_owner_id_idx on public.conversations (owner_id, updated_at desc);

create table if not exists public.messages (
    id uuid primary key default gen_random_uuid(),
    conversation_id uuid not null references public.conversations (id) on delete cascade,
    role text not null,
    content text not null,
    metadata jsonb not null default '{}'::jsonb,
    created_at timestamptz not null default now(),
    constraint messages_role_check check (role in ('user', 'assistant', 'system'))
);
alter table public.messages enable row level security;

create index if not exists messages_conversation_id_idx on public.messages (conversation_id, created_at);

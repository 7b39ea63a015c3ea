-- Stored email templates (docs/agent-state.md): Mustache sources and their declared variables.
create table email_templates (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  name text not null,
  alias text,
  subject text not null,
  body_text text not null,
  body_html text,
  -- [{name, required, default, description}]
  variables jsonb not null default '[]',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index email_templates_org_idx on email_templates (org_id, id desc);
create unique index email_templates_alias_key on email_templates (org_id, alias) where alias is not null;

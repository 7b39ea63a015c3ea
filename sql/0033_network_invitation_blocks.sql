-- Organizations that declined an invitation and blocked its inviter (the network's owner
-- organization): the blocked organization's invitations to them are refused like an unknown id.
create table network_invitation_blocks (
  org_id uuid not null references orgs (id) on delete cascade,
  blocked_org_id uuid not null references orgs (id) on delete cascade,
  created_at timestamptz not null default now(),
  primary key (org_id, blocked_org_id)
);

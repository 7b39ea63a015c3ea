-- RFC 8707 resource indicators: the resource (audience) an authorization was asked for, carried
-- from the authorization request to its code and grant; every access token of the grant is good
-- for that resource only. Null is the REST API ({auth_url}/v1), what every grant was before.
alter table oauth_authorization_requests add column resource text;
alter table oauth_codes add column resource text;
alter table oauth_grants add column resource text;

-- Clients identified by a client ID metadata document: the client_id is the https URL of the
-- document, fetched (through the SSRF guard) at each authorization request; the row caches what
-- it said, so the token endpoint knows the client.
alter table oauth_clients add column metadata_document boolean not null default false;

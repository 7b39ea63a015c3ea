-- Managed builds: the uploaded source files and entry of a deployment bundled by the service,
-- kept for GET /v1/functions/{id}/source. Null for deployments uploaded as one module.
alter table function_deployments add column sources jsonb, add column entry text;

-- A function's runtime key (SERVICE_API_KEY) names its function, so a request can tell a runtime
-- from a key a person or an agent account holds: a runtime key may not mint credentials (they would
-- outlive the function, whose deletion revokes the runtime key). No foreign key: functions already
-- reference api_keys, and the key is inserted before its function.
alter table api_keys add column function_id uuid;
update api_keys k set function_id = f.id from functions f where f.runtime_key_id = k.id;

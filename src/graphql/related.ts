/** The objects a field of another type points at, by id, through the batch loaders; null when gone. */
import { presentEmail } from '../emails/service'
import { presentFunction } from '../functions/service'
import { presentDelivery } from '../webhooks/deliveries.service'
import { presentEndpoint } from '../webhooks/endpoints.service'
import { allow, type GqlContext } from './context'

/** One object by its id, through its loader, for a caller allowed the REST read at `path`; null when there is none or it is gone. */
async function byId<Row, Node>(
  g: GqlContext,
  path: string,
  what: string,
  id: string | null,
  load: (id: string) => Promise<Row | null>,
  present: (row: Row) => Node,
) {
  allow(g, path, what)
  const row = id ? await load(id) : null
  return row ? present(row) : null
}

export const endpointById = (g: GqlContext, id: string | null) =>
  byId(g, '/v1/endpoints/:id', 'webhook endpoints', id, id => g.loaders.endpoint.load(id), presentEndpoint)

export const deliveryById = (g: GqlContext, id: string | null) =>
  byId(g, '/v1/webhooks/deliveries/:id', 'webhook deliveries', id, id => g.loaders.delivery.load(id), presentDelivery)

export const emailById = (g: GqlContext, id: string | null) => byId(g, '/v1/emails/:id', 'mail', id, id => g.loaders.email.load(id), presentEmail)

export const functionById = (g: GqlContext, id: string | null) =>
  byId(g, '/v1/functions/:id', 'functions', id, id => g.loaders.function.load(id), presentFunction)

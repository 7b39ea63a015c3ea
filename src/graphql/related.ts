/** The objects a field of another type points at, by id, through the batch loaders; null when gone. */
import { presentEmail } from '../emails/service'
import { presentFunction } from '../functions/service'
import { presentDelivery } from '../webhooks/deliveries.service'
import { presentEndpoint } from '../webhooks/endpoints.service'
import { allow, type GqlContext } from './context'

export async function endpointById(g: GqlContext, id: string | null) {
  allow(g, '/v1/endpoints/:id', 'webhook endpoints')
  const row = id ? await g.loaders.endpoint.load(id) : null
  return row ? presentEndpoint(row) : null
}

export async function deliveryById(g: GqlContext, id: string | null) {
  allow(g, '/v1/webhooks/deliveries/:id', 'webhook deliveries')
  const row = id ? await g.loaders.delivery.load(id) : null
  return row ? presentDelivery(row) : null
}

export async function emailById(g: GqlContext, id: string | null) {
  allow(g, '/v1/emails/:id', 'mail')
  const row = id ? await g.loaders.email.load(id) : null
  return row ? presentEmail(row) : null
}

export async function functionById(g: GqlContext, id: string | null) {
  allow(g, '/v1/functions/:id', 'functions')
  const row = id ? await g.loaders.function.load(id) : null
  return row ? presentFunction(row) : null
}

/** The organization's credit balance. */
import { t } from 'elysia'

export const Balance = t.Object({ balance_cents: t.Integer(), currency: t.Literal('USD') })

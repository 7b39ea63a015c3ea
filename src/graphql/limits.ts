/**
 * The depth and cost limits of a query, checked after validation and before anything runs.
 *
 * Depth: the nesting of fields. Cost: how many objects the query can make us read at most.
 * A field returning a connection costs 1 plus `first` times the cost of what it selects; a
 * field returning another object costs 1 plus what it selects; edges and page infos (wrappers)
 * and scalars cost nothing. Introspection (`__schema`, `__type`, `__typename`) is free and not
 * counted, so standard tools can read the schema.
 */
import {
  getNamedType,
  isObjectType,
  Kind,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql'
import { errors } from '../errors'
import { PAGE_DEFAULT } from './connection'

export const MAX_DEPTH = 10
export const MAX_COST = 5000
/** the parser stops past this many tokens, before building a document of that size */
export const MAX_TOKENS = 5000

const isConnection = (name: string) => name.endsWith('Connection')
const isWrapper = (name: string) => name.endsWith('Edge') || name === 'PageInfo'

interface Measure {
  depth: number
  cost: number
}

export function measure(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  fragments: Record<string, FragmentDefinitionNode>,
  variables: Record<string, unknown>,
): Measure {
  const root = schema.getRootType(operation.operation)
  if (!root) return { depth: 0, cost: 0 }

  function firstOf(field: FieldNode, type: GraphQLObjectType): number {
    const def = type.getFields()[field.name.value]!
    const arg = def.args.find(a => a.name === 'first')
    const node = field.arguments?.find(a => a.name.value === 'first')?.value
    const value = node?.kind === Kind.INT ? Number(node.value) : node?.kind === Kind.VARIABLE ? variables[node.name.value] : undefined
    return typeof value === 'number' && value > 0 ? value : typeof arg?.defaultValue === 'number' ? arg.defaultValue : PAGE_DEFAULT
  }

  function walk(set: SelectionSetNode, type: GraphQLObjectType, depth: number, seen: Set<string>): Measure {
    let deepest = depth
    let cost = 0
    for (const selection of set.selections) {
      let inner: Measure
      if (selection.kind === Kind.FIELD) {
        if (selection.name.value.startsWith('__')) continue
        const def = type.getFields()[selection.name.value]
        if (!def) continue
        const named = getNamedType(def.type)
        const below = selection.selectionSet && isObjectType(named) ? walk(selection.selectionSet, named, depth + 1, seen) : { depth: depth + 1, cost: 0 }
        if (!isObjectType(named)) inner = below
        else if (isConnection(named.name)) inner = { depth: below.depth, cost: 1 + firstOf(selection, type) * below.cost }
        else if (isWrapper(named.name)) inner = below
        else inner = { depth: below.depth, cost: 1 + below.cost }
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const on = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : type
        inner = isObjectType(on) ? walk(selection.selectionSet, on, depth, seen) : { depth, cost: 0 }
      } else {
        // validation has refused cycles; `seen` keeps a spread inside itself from looping anyway
        const fragment = fragments[selection.name.value]
        const on = fragment && schema.getType(fragment.typeCondition.name.value)
        if (!fragment || !isObjectType(on) || seen.has(fragment.name.value)) continue
        inner = walk(fragment.selectionSet, on, depth, new Set([...seen, fragment.name.value]))
      }
      deepest = Math.max(deepest, inner.depth)
      cost += inner.cost
    }
    return { depth: deepest, cost }
  }

  return walk(operation.selectionSet, root, 0, new Set())
}

/** Throws validation_error when the operation is too deep or too costly; details say by how much. */
export function checkLimits(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  fragments: Record<string, FragmentDefinitionNode>,
  variables: Record<string, unknown>,
) {
  const { depth, cost } = measure(schema, operation, fragments, variables)
  if (depth > MAX_DEPTH) throw errors.validation('query', `nests fields ${depth} deep; at most ${MAX_DEPTH}`, { depth, max_depth: MAX_DEPTH })
  if (cost > MAX_COST) {
    throw errors.validation('query', `could read up to ${cost} objects; at most ${MAX_COST} (ask for smaller pages with first, or fewer nested lists)`, {
      cost,
      max_cost: MAX_COST,
    })
  }
  return { depth, cost }
}

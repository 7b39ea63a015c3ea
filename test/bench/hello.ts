/** The baseline: the barest Bun.serve answer, measured with the same load generator. */
const server = Bun.serve({ port: Number(process.argv[2] ?? 0), hostname: '127.0.0.1', fetch: () => new Response('hello') })
console.log(server.port)

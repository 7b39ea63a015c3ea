# Sourced by the scripts of bin/: sets $root and $bun, the Bun on the PATH or the one that
# `make dev` / `make test` installed into .tools/ when there is none.
root="$(cd "$(dirname "$0")/.." && pwd)"
bun="$(command -v bun 2>/dev/null || true)"
[ -n "$bun" ] || bun="$root/.tools/node_modules/.bin/bun"
if [ ! -x "$bun" ] || [ ! -d "$root/node_modules" ]; then
  echo "$(basename "$0"): Bun and the dependencies are not installed yet; run 'make dev' or 'make test' first" >&2
  exit 1
fi

#!/usr/bin/env bash
# A local STAND-IN for the base image oven/bun:<version>-slim, for machines that reach no image
# registry (make image-check uses it only when the real image cannot be pulled). It is made the
# way the real one is: Debian bookworm, slim (no documentation, manuals or locales), the Bun
# binary at /usr/local/bin/bun (bunx and a `node` fallback beside it), the user bun (uid and gid
# 1000), WORKDIR /home/bun/app. Its parts come from the registries this machine reaches: Debian's
# packages (mmdebstrap) and the npm package @oven/bun-linux-x64-baseline, whose binary is the one
# the real image ships for amd64. The image carries the label agent-mail.stand-in=<recipe hash>,
# so nobody takes it for the real one, and it is made again when this recipe changes.
#
#   test/image/stand-in-base.sh <bun version> <image name>
set -euo pipefail
version="$1"
image="$2"
recipe_hash="$( (cat "$0"; echo "$version") | sha256sum | cut -c1-16)"

if [ "$(podman image inspect --format '{{ index .Labels "agent-mail.stand-in" }}' "$image" 2>/dev/null || true)" = "$recipe_hash" ]; then
  echo "image-check: stand-in base $image is up to date (recipe $recipe_hash)"
  exit 0
fi
command -v mmdebstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "image-check: building a STAND-IN for $image (Debian bookworm slim + Bun $version from the npm registry)"
(cd "$work" && npm pack --silent "@oven/bun-linux-x64-baseline@$version" >/dev/null && tar -xzf oven-bun-linux-x64-baseline-*.tgz)
bun_bin="$work/package/bin/bun"
"$bun_bin" --version | grep -qx "$version"

# debian:bookworm-slim's dpkg filters: no documentation (but the copyright files), manuals or locales
# merged /usr made by the hook, not by the usrmerge package (which would pull in perl)
mmdebstrap --quiet --variant=minbase --format=tar --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
  --customize-hook="copy-in $bun_bin /usr/local/bin" \
  --customize-hook='chroot "$1" sh -c "ln -s /usr/local/bin/bun /usr/local/bin/bunx && mkdir -p /usr/local/bun-node-fallback-bin && ln -s /usr/local/bin/bun /usr/local/bun-node-fallback-bin/node"' \
  --customize-hook='chroot "$1" sh -c "groupadd --gid 1000 bun && useradd --uid 1000 --gid bun --shell /bin/sh --create-home bun && mkdir -p /home/bun/app && chown bun:bun /home/bun/app"' \
  --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
  bookworm "$work/rootfs.tar" http://deb.debian.org/debian >"$work/mmdebstrap.log" 2>&1 \
  || { cat "$work/mmdebstrap.log"; exit 1; }

previous="$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)"
podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/bun-node-fallback-bin' \
  --change 'WORKDIR /home/bun/app' \
  --change 'CMD ["/usr/local/bin/bun"]' \
  --change "LABEL agent-mail.stand-in=$recipe_hash" \
  --change "LABEL org.opencontainers.image.description=\"STAND-IN for $image, built locally by test/image/stand-in-base.sh; not the published image\"" \
  "$work/rootfs.tar" "$image" >/dev/null
# the stand-in this one replaces (an image built on it keeps it until that image goes too)
[ -z "$previous" ] || podman rmi "$previous" >/dev/null 2>&1 || true
echo "image-check: stand-in base $image built ($(podman image inspect --format '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'))"

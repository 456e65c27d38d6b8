#!/usr/bin/env bash
# Installs the schema validators test/deploy uses to check inferd's Kubernetes
# and KServe manifests (deploy/): the npm packages kubernetes-models (the
# Kubernetes API's OpenAPI schemas compiled to ajv validators, one model per
# kind), @kubernetes-models/prometheus-operator (ServiceMonitor) and ajv,
# outside the source tree, at the exact versions of
# third_party/kubernetes-models/package-lock.json.
# Idempotent: with the pinned set in place it changes nothing and says so.
#   install-kubernetes-models.sh           install when missing
#   install-kubernetes-models.sh --check   exit 1 (saying what is missing) when absent
# Where: ${KM_HOME:-/opt/inferd/kubernetes-models-5.1.0}/node_modules, with
# $KM_HOME/VERSION holding the sha256 of the lock file it was installed from
# (written last, so it marks a complete install of that lock file).
# `npm ci` installs exactly what the lock file lists, from the registry npm is
# configured with, and refuses any package whose sha512 is not the lock
# file's `integrity`; --ignore-scripts runs none of their install scripts.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

version=5.1.0
src=$here/kubernetes-models
dest=${KM_HOME:-/opt/inferd/kubernetes-models-$version}
lock_sum=$(sha256sum "$src/package-lock.json" | awk '{ print $1 }')

installed() {
  [ -f "$dest/node_modules/kubernetes-models/package.json" ] && [ -f "$dest/VERSION" ] &&
    [ "$(head -n 1 "$dest/VERSION")" = "$lock_sum" ]
}

if [ "${1:-}" = "--check" ]; then
  if installed; then exit 0; fi
  echo "missing kubernetes-models $version (from $src/package-lock.json) in $dest" \
    "(run third_party/install-kubernetes-models.sh)" >&2
  exit 1
fi
if installed; then
  echo "install-kubernetes-models: kubernetes-models $version present in $dest"
  exit 0
fi

sudo=
if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
parent=$dest
while [ ! -e "$parent" ]; do parent=$(dirname "$parent"); done
dsudo=$sudo
if [ -w "$parent" ]; then dsudo=; fi
if ! command -v npm >/dev/null 2>&1; then
  echo "install-kubernetes-models: installing Debian's npm"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends npm
fi

# Installed in a scratch folder, then moved into place whole, so that a test
# running meanwhile never sees half a node_modules.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$src/package.json" "$src/package-lock.json" "$tmp/"
echo "install-kubernetes-models: npm ci (kubernetes-models $version)"
# The packages declare node >=22 in `engines`; they run on the node 20 this
# machine has (test/deploy checks them, negative cases included).
(cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
printf '%s\nnpm ci of third_party/kubernetes-models/package-lock.json\n' "$lock_sum" \
  >"$tmp/VERSION"
$dsudo mkdir -p "$dest"
$dsudo rm -rf "$dest/node_modules.new"
$dsudo cp -a "$tmp/node_modules" "$dest/node_modules.new"
$dsudo rm -rf "$dest/node_modules"
$dsudo mv "$dest/node_modules.new" "$dest/node_modules"
$dsudo install -m 0644 "$tmp/VERSION" "$dest/VERSION"
echo "install-kubernetes-models: installed in $dest"

#!/usr/bin/env bash
# Installs ONNX Runtime's shared library for the onnxruntime backend, outside
# the source tree, from the npm package onnxruntime-node (the one place the
# Linux x64 build of libonnxruntime.so.1 is published as a registry package).
# Idempotent: with the pinned release in place it changes nothing and says so.
#   install-onnxruntime.sh           fetch and install it when missing
#   install-onnxruntime.sh --check   exit 1 (saying what is missing) when absent
# Where: ${ORT_HOME:-/opt/inferd/onnxruntime-1.30.0}/lib/libonnxruntime.so.1,
# with $ORT_HOME/VERSION naming the release (written last, so it marks a
# complete install). The package is fetched with `npm pack` from the
# registry npm is configured with, and refused unless its sha256 is the
# pinned one. ORT_TARBALL=path uses an already downloaded package instead
# (checked the same way), for machines without the network.
set -euo pipefail

version=1.30.0
package=onnxruntime-node
sha256=6e3390d6b783e7be946fad629292799da28d0b42f84856e50d2c1b0383291e75
member=package/bin/napi-v6/linux/x64/libonnxruntime.so.1
dest=${ORT_HOME:-/opt/inferd/onnxruntime-$version}

installed() {
  [ -f "$dest/lib/libonnxruntime.so.1" ] && [ -f "$dest/VERSION" ] &&
    [ "$(head -n 1 "$dest/VERSION")" = "$version" ]
}

if [ "${1:-}" = "--check" ]; then
  if installed; then exit 0; fi
  echo "missing ONNX Runtime $version: $dest/lib/libonnxruntime.so.1" \
    "(run third_party/install-onnxruntime.sh)" >&2
  exit 1
fi
if installed; then
  echo "install-onnxruntime: ONNX Runtime $version present in $dest"
  exit 0
fi
if [ "$(uname -s)/$(uname -m)" != Linux/x86_64 ]; then
  echo "install-onnxruntime: $package $version ships libonnxruntime.so.1" \
    "for Linux x86_64 only, not $(uname -s)/$(uname -m)" >&2
  exit 1
fi

# sudo only where needed: for apt-get, and for $dest when its nearest
# existing parent is not ours to write (the default under /opt).
sudo=
if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
parent=$dest
while [ ! -e "$parent" ]; do parent=$(dirname "$parent"); done
dsudo=$sudo
if [ -w "$parent" ]; then dsudo=; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

tarball=${ORT_TARBALL:-}
if [ -z "$tarball" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "install-onnxruntime: installing Debian's npm to fetch $package"
    $sudo apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y \
      --no-install-recommends npm
  fi
  echo "install-onnxruntime: fetching $package@$version with npm pack"
  (cd "$tmp" && npm pack --silent "$package@$version" >/dev/null)
  tarball=$tmp/$package-$version.tgz
fi
got=$(sha256sum "$tarball" | awk '{ print $1 }')
if [ "$got" != "$sha256" ]; then
  echo "install-onnxruntime: refusing $tarball: sha256 $got," \
    "expected $sha256 for $package@$version" >&2
  exit 1
fi
tar -xzf "$tarball" -C "$tmp" "$member"

# The library goes in under a temporary name and is renamed into place, so a
# process that has the old one mapped keeps a valid file; VERSION comes last.
$dsudo mkdir -p "$dest/lib"
$dsudo install -m 0755 "$tmp/$member" "$dest/lib/.libonnxruntime.so.1.new"
$dsudo mv -f "$dest/lib/.libonnxruntime.so.1.new" "$dest/lib/libonnxruntime.so.1"
printf '%s\nfrom npm %s@%s, sha256 %s\n' "$version" "$package" "$version" \
  "$sha256" >"$tmp/VERSION"
$dsudo install -m 0644 "$tmp/VERSION" "$dest/VERSION"
echo "install-onnxruntime: installed ONNX Runtime $version in $dest"

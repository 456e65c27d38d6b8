#!/usr/bin/env bash
# Installs the Debian packages listed in debian-packages.txt that are missing,
# then ONNX Runtime's library (install-onnxruntime.sh) and the manifest
# validators of test/deploy (install-kubernetes-models.sh), both outside the
# tree.
# Idempotent: with everything present it changes nothing and says so.
#   install-deps.sh [LIST]           install what is missing (apt-get update first)
#   install-deps.sh --check [LIST]   exit 1 (listing them) when some are missing
# LIST defaults to third_party/debian-packages.txt (bench/ has its own list).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

check=0
if [ "${1:-}" = "--check" ]; then
  check=1
  shift
fi
list=${1:-"$here/debian-packages.txt"}
mapfile -t pkgs < <(sed -e 's/#.*//' "$list" | awk 'NF { print $1 }')
missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "$check" = 1 ]; then
  rc=0
  if [ ${#missing[@]} -ne 0 ]; then
    echo "missing Debian packages: ${missing[*]}" >&2
    rc=1
  fi
  "$here/install-onnxruntime.sh" --check || rc=1
  "$here/install-kubernetes-models.sh" --check || rc=1
  exit $rc
fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} Debian packages present"
  "$here/install-onnxruntime.sh"
  exec "$here/install-kubernetes-models.sh"
fi

sudo=
if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
echo "install-deps: installing ${missing[*]}"
# A fresh machine has stale package lists: update before installing.
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
"$here/install-onnxruntime.sh"
"$here/install-kubernetes-models.sh"

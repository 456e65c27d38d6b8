#!/usr/bin/env bash
# Builds inferd's container image with podman (docs/deploy.md, "Container
# image"): stages the root file systems from the build (stage.sh), then
# `podman build` of deploy/image/Containerfile, and prints the image's size.
#
#   build.sh TARGET TAG     TARGET: inferd or inferd-full
#
# Environment: BUILD (default build), IMAGE_SOURCE (the source label; default
# the git remote origin's URL), PODMAN (default podman), IMAGE_LAYERS
# (default false: podman keeps no intermediate image per step, which would
# pile up as dangling images at every rebuild; the build takes seconds).
#
# Rootful podman with runc (crun cannot set up cgroups on every machine), and
# explicit ulimits within the machine's hard limits (podman's defaults can
# exceed them; its runc also refuses an nproc above kernel.pid_max).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
target=${1:?usage: build.sh inferd|inferd-full TAG}
tag=${2:?usage: build.sh inferd|inferd-full TAG}
build=${BUILD:-build}
podman=${PODMAN:-podman}

case "$target" in
  inferd) full= ;;
  inferd-full) full=full ;;
  *) echo "build.sh: unknown target $target (inferd, inferd-full)" >&2; exit 2 ;;
esac

cd "$root"
ctx="$build/image/$target"
t0=$(date +%s.%N)
bash "$here/stage.sh" "$build" "$ctx" $full
t1=$(date +%s.%N)

version=$(sed -n 's/^#define IFD_SERVER_VERSION "\(.*\)"/\1/p' core/server.h)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [ "$revision" != unknown ] && [ -n "$(git status --porcelain 2>/dev/null)" ]; then
  revision="$revision-dirty"
fi
source=${IMAGE_SOURCE:-$(git config --get remote.origin.url 2>/dev/null || echo unknown)}
nofile=$(ulimit -Hn)
nproc=$(ulimit -Hu)
pid_max=$(cat /proc/sys/kernel/pid_max)
if [ "$nproc" = unlimited ] || [ "$nproc" -gt "$pid_max" ]; then nproc=$pid_max; fi
if [ "$nofile" = unlimited ]; then nofile=1048576; fi

"$podman" build --runtime runc --format docker \
  --ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc" \
  --network none --layers="${IMAGE_LAYERS:-false}" \
  --build-arg VERSION="$version" --build-arg REVISION="$revision" --build-arg SOURCE="$source" \
  --target "$target" -t "$tag" -f "$here/Containerfile" "$ctx"
t2=$(date +%s.%N)

bytes=$("$podman" image inspect --format '{{.Size}}' "$tag")
awk -v tag="$tag" -v t="$target" -v b="$bytes" -v t0="$t0" -v t1="$t1" -v t2="$t2" 'BEGIN {
  printf "image %s (%s): %d bytes (%.1f MB), staged in %.1f s, built in %.1f s\n",
    tag, t, b, b / 1e6, t1 - t0, t2 - t1 }'

#!/usr/bin/env bash
# Stages the root file systems the container image copies in
# (deploy/image/Containerfile, FROM scratch): the built server, its backends
# and exactly the shared libraries they need, resolved here with ldd.
#
#   stage.sh BUILD OUT [full]
#
# OUT/base/  the `inferd` target: inferd, inferd-health-probe, tini,
#            libtritonserver.so, the identity and onnxruntime backends, the
#            libraries ldd finds for all of them (and the dynamic loader),
#            /etc/passwd and /etc/group with the user inferd (1000), an
#            ld.so.cache made by `ldconfig -r`, empty /models and /tmp.
# OUT/full/  with `full`, what the `inferd-full` target adds on top: the
#            python backend with Debian's python3.11 standard library and
#            numpy (and bash, tar and gzip for EXECUTION_ENV_PATH), the
#            pytorch backend with Debian's libtorch, and their libraries
#            (those already in base/ are not copied twice); without `full`,
#            an empty folder.
#
# Layout, as Triton's image: /opt/tritonserver/bin/inferd (and tritonserver,
# a link to it), /opt/tritonserver/backends/<name>/, /opt/tritonserver/lib/.
# Every library keeps the path ldd found it at (/lib is folded into /usr/lib,
# as Debian's merged /usr has it), and ld.so.cache lists their folders, so a
# library in a folder of its own (OpenBLAS, CUDA's runtime) is found too.
set -euo pipefail

build=${1:?usage: stage.sh BUILD OUT [full]}
out=${2:?usage: stage.sh BUILD OUT [full]}
full=${3:-}
build=$(cd "$build" && pwd)
tini=/usr/bin/tini
pyver=python3.11
opt=opt/tritonserver

for f in "$build/inferd" "$build/inferd-health-probe" "$build/lib/libtritonserver.so" \
  "$build/backends/identity/libtriton_identity.so" \
  "$build/backends/onnxruntime/libtriton_onnxruntime.so" "$tini"; do
  [ -f "$f" ] || { echo "stage.sh: $f is missing (make all; make deps-image)" >&2; exit 1; }
done

rm -rf "$out/base" "$out/full"
mkdir -p "$out/base" "$out/full"

# Folders /lib and /lib64 are links into /usr, as on Debian 12.
canon() {
  case "$1" in
    /lib/*) echo "/usr$1" ;;
    /lib64/*) echo "/usr$1" ;;
    *) echo "$1" ;;
  esac
}

# libs ROOT SKIP FILE...: copies into ROOT every library ldd resolves for the
# ELF files given (those under $build, which ship with their backend, and
# those already under SKIP, a staged root or "", are left out). A library
# ldd cannot find fails the staging.
libs() {
  local root=$1 skip=$2
  shift 2
  local lines
  lines=$(LD_LIBRARY_PATH="$build/lib" ldd "$@" 2>&1) || {
    echo "$lines" >&2
    echo "stage.sh: ldd failed" >&2
    exit 1
  }
  if grep -q 'not found' <<<"$lines"; then
    grep -B20 'not found' <<<"$lines" | grep -E '^/|not found' >&2
    echo "stage.sh: a library is missing (above)" >&2
    exit 1
  fi
  local p dst
  while read -r p; do
    case "$p" in "$build"/*) continue ;; esac
    dst=$(canon "$p")
    [ -n "$skip" ] && [ -e "$skip$dst" ] && continue
    [ -e "$root$dst" ] && continue
    mkdir -p "$root$(dirname "$dst")"
    cp -L "$p" "$root$dst"
    dirname "$dst" >>"$root/.libdirs"
  done < <(grep -oE '(=> )?/[^ ]+ \(0x' <<<"$lines" | sed -E 's/^=> //; s/ \(0x$//' | sort -u)
}

# ---- base: the server, identity and onnxruntime ----------------------------
b=$out/base
mkdir -p "$b/$opt/bin" "$b/$opt/lib" "$b/$opt/backends" "$b/usr/bin" "$b/etc" "$b/models" "$b/tmp"
chmod 1777 "$b/tmp"
ln -s usr/lib "$b/lib"
ln -s usr/lib64 "$b/lib64"
cp "$build/inferd" "$build/inferd-health-probe" "$b/$opt/bin/"
ln -s inferd "$b/$opt/bin/tritonserver"
cp "$build/lib/libtritonserver.so" "$b/$opt/lib/"
cp "$tini" "$b/usr/bin/tini"
for be in identity onnxruntime; do
  cp -r "$build/backends/$be" "$b/$opt/backends/"
done
# Debug information stays in the build: strip what we built (not the
# libraries, whose Debian packages ship them stripped already).
strip --strip-unneeded "$b/$opt/bin/inferd" "$b/$opt/bin/inferd-health-probe" \
  "$b/$opt/lib/libtritonserver.so" "$b/$opt/backends"/*/libtriton_*.so
libs "$b" "" "$build/inferd" "$build/inferd-health-probe" "$build/lib/libtritonserver.so" \
  "$build/backends/identity/libtriton_identity.so" \
  "$build/backends/onnxruntime/libtriton_onnxruntime.so" \
  "$build/backends/onnxruntime/libonnxruntime.so.1" "$tini"
# glibc loads libgcc_s when a thread is cancelled or unwinds; nothing links it
# but it must be there.
[ -e "$b/usr/lib/x86_64-linux-gnu/libgcc_s.so.1" ] ||
  cp -L /usr/lib/x86_64-linux-gnu/libgcc_s.so.1 "$b/usr/lib/x86_64-linux-gnu/"

cat >"$b/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/usr/sbin/nologin
inferd:x:1000:1000:inferd:/tmp:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
cat >"$b/etc/group" <<'EOF'
root:x:0:
inferd:x:1000:
nogroup:x:65534:
EOF
# Numeric addresses only are looked up, but getaddrinfo reads these.
printf 'hosts: files\n' >"$b/etc/nsswitch.conf"
printf '127.0.0.1 localhost\n::1 localhost\n' >"$b/etc/hosts"

# ldcache ROOT DIRS...: ROOT/etc/ld.so.conf lists the folders libs() copied
# into (in the files DIRS), and ROOT/etc/ld.so.cache indexes them.
ldcache() {
  local root=$1
  shift
  sort -u "$@" >"$root/etc/ld.so.conf"
  ldconfig -r "$root"
}

ldcache "$b" "$b/.libdirs"
if [ "$full" != full ]; then
  rm "$b/.libdirs"
  exit 0
fi

# ---- full: + python (python3.11, numpy) and pytorch (libtorch) -------------
f=$out/full
for x in "$build/backends/python/libtriton_python.so" \
  "$build/backends/python/triton_python_backend_stub" \
  "$build/backends/pytorch/libtriton_pytorch.so"; do
  [ -f "$x" ] || { echo "stage.sh: $x is missing (make all)" >&2; exit 1; }
done
mkdir -p "$f/$opt/backends" "$f/usr/lib/python3/dist-packages" "$f/etc"
cp -r "$build/backends/python" "$build/backends/pytorch" "$f/$opt/backends/"
strip --strip-unneeded "$f/$opt/backends/python/libtriton_python.so" \
  "$f/$opt/backends/python/triton_python_backend_stub" \
  "$f/$opt/backends/pytorch/libtriton_pytorch.so"
# The standard library without what a model cannot use in a container
# (tests, IDLE, Tk, the 2to3 and ensurepip tooling), then numpy.
tar -C /usr/lib -cf - --exclude="$pyver/test" --exclude="$pyver/idlelib" \
  --exclude="$pyver/tkinter" --exclude="$pyver/turtledemo" --exclude="$pyver/lib2to3" \
  --exclude="$pyver/ensurepip" --exclude="$pyver/lib-dynload/_tkinter*" \
  --exclude="$pyver/config-*" "$pyver" | tar -C "$f/usr/lib" -xf -
# sitecustomize.py is a link into /etc/python3.11 on Debian.
mkdir -p "$f/etc/$pyver"
cp -L "/etc/$pyver/sitecustomize.py" "$f/etc/$pyver/" 2>/dev/null || true
cp -r /usr/lib/python3/dist-packages/numpy "$f/usr/lib/python3/dist-packages/"
# A model's EXECUTION_ENV_PATH (a conda-pack archive) is extracted with tar
# (and gzip), and its stub starts through bash, which sources bin/activate.
mkdir -p "$f/usr/bin"
cp /usr/bin/bash /usr/bin/tar /usr/bin/gzip "$f/usr/bin/"
mapfile -t elfs < <(find "$f/usr/lib/$pyver" "$f/usr/lib/python3/dist-packages" -name '*.so' -type f)
libs "$f" "$b" "$build/backends/python/libtriton_python.so" \
  "$build/backends/python/triton_python_backend_stub" \
  "$build/backends/pytorch/libtriton_pytorch.so" /usr/bin/bash /usr/bin/tar /usr/bin/gzip \
  "${elfs[@]}"
# One ld.so.cache for both roots, made on their union (hard links): the full
# target's replaces the base's.
rm -rf "$out/all"
cp -al "$b" "$out/all"
cp -al "$f/." "$out/all/"
touch "$f/.libdirs"
ldcache "$out/all" "$b/.libdirs" "$f/.libdirs"
cp "$out/all/etc/ld.so.conf" "$out/all/etc/ld.so.cache" "$f/etc/"
rm -rf "$out/all" "$b/.libdirs" "$f/.libdirs"

#!/usr/bin/env bash
#
# test/abi/check_exports.sh - checks that libtritonserver.so (or the inferd
# executable, which stands in for it) exports exactly the Triton ABI: every
# function the Triton ABI headers say the server implements, and nothing else.
#
# Usage (paths relative to the current directory; the headers are found
# relative to this script):
#   bash test/abi/check_exports.sh build/lib/libtritonserver.so
#   bash test/abi/check_exports.sh build/inferd
#
# Every function declared with TRITONSERVER_DECLSPEC, TRITONBACKEND_DECLSPEC or
# TRITONREPOAGENT_DECLSPEC / TRITONCACHE_DECLSPEC in
# backend_api/include/triton/core/tritonserver.h, tritonbackend.h,
# tritonrepoagent.h and tritoncache.h (and
# inferd's extensions, backend_api/include/inferd/inferd_backend.h) must
# be a defined dynamic symbol of the file: a backend built for Triton is
# opened with RTLD_NOW and fails to load if any symbol it calls is missing.
#
# Every other defined dynamic symbol fails the check (core's ifd_* functions,
# protobuf-c descriptors, a TRITON*-named helper the headers do not declare):
# backend_api/libtritonserver.map keeps them local. The file must also carry
# the soname libtritonserver.so, the DT_NEEDED name of every backend; for the
# executable that is what lets ld.so match a backend's dependency to it
# instead of loading a second copy of core (see the Makefile).
#
# Functions declared with TRITONBACKEND_ISPEC (TRITONCACHE_ISPEC: by cache
# plugins) are implemented by backends and
# are not required. Most of them must also NOT be exported: the loader looks
# them up with dlsym() on the backend's handle, which searches the backend's
# dependencies too, so a server definition would stand in for an entry point
# the backend left out. The exceptions are the ISPEC-marked functions that
# Triton's own core implements anyway (its header marks them ISPEC by
# mistake); they are listed in SERVER_IMPLEMENTED_ISPEC and are allowed.
#
# Every name of test/abi/triton_api.txt (the server-side functions of
# Triton's current headers) must be declared for the server in inferd's
# headers: a function Triton's library offers and inferd's headers leave out
# would be exported by neither check above, and a backend calling it would
# fail to load ("NOT DECLARED").
#
# Prints one line per missing or wrongly exported name (and a wrong soname),
# then "check_exports: N passed, M failed". Exits 0 when M is 0, 1 otherwise,
# 2 on a usage or tool error.

set -u -o pipefail
export LC_ALL=C # one collation for sort and comm

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HEADERS=("$ROOT/backend_api/include/triton/core/tritonserver.h"
         "$ROOT/backend_api/include/triton/core/tritonbackend.h"
         "$ROOT/backend_api/include/inferd/inferd_backend.h"
         "$ROOT/backend_api/include/triton/core/tritonrepoagent.h"
         "$ROOT/backend_api/include/triton/core/tritoncache.h")
TRITON_API="$ROOT/test/abi/triton_api.txt"

# ISPEC in the header, defined by Triton's core (src/backend_model.cc).
SERVER_IMPLEMENTED_ISPEC=" TRITONBACKEND_InferenceResponseOutputByName "

if [ $# -ne 1 ]; then
  echo "usage: $0 path/to/libtritonserver.so|path/to/inferd" >&2
  exit 2
fi
lib=$1
if [ ! -f "$lib" ]; then
  echo "check_exports: no such library: $lib" >&2
  exit 2
fi
for h in "${HEADERS[@]}"; do
  if [ ! -f "$h" ]; then
    echo "check_exports: no such header: $h" >&2
    exit 2
  fi
done

# Prints "<spec> <name>" for every function declaration of the headers, where
# spec is DECL (the server implements it) or ISPEC (the backend does).
# Comments and preprocessor lines (with their continuations) go first, then
# the text is cut into statements at ';' so that a declaration spanning lines
# is one statement; a statement declares a function when it carries one of
# the *_DECLSPEC / *_ISPEC markers, and the function's name is the first
# identifier followed by '('. Typedefs of function pointers carry no marker.
declared_functions() {
  perl -0777 -ne '
    s{/\*.*?\*/}{ }gs;                 # block comments
    s{//[^\n]*}{}g;                    # line comments
    s{^[ \t]*#(?:[^\n]*\\\n)*[^\n]*}{}mg; # preprocessor lines
    for my $st (split /;/) {
      my $spec;
      if ($st =~ /\bTRITON(?:BACKEND|REPOAGENT|CACHE)_ISPEC\b/) { $spec = "ISPEC"; }
      elsif ($st =~ /\bTRITON(?:SERVER|BACKEND|REPOAGENT|CACHE)_DECLSPEC\b/) { $spec = "DECL"; }
      else { next; }
      next if $st =~ /\btypedef\b/;
      if ($st =~ /\b([A-Za-z_][A-Za-z0-9_]*)\s*\(/) { print "$spec $1\n"; }
      else { print STDERR "check_exports: cannot parse: $st\n"; exit 3; }
    }
  ' "$@"
}

decls=$(declared_functions "${HEADERS[@]}") || {
  echo "check_exports: could not parse the headers" >&2
  exit 2
}
# Every defined dynamic symbol, functions and data alike.
exports=$(nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u) || {
  echo "check_exports: nm failed on $lib" >&2
  exit 2
}
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p') || {
  echo "check_exports: readelf failed on $lib" >&2
  exit 2
}

passed=0
failed=0
while read -r spec name; do
  [ -n "$name" ] || continue
  if grep -qxF -- "$name" <<<"$exports"; then exported=1; else exported=0; fi
  if [ "$spec" = DECL ]; then
    if [ $exported = 1 ]; then
      passed=$((passed + 1))
    else
      echo "MISSING: $name"
      failed=$((failed + 1))
    fi
  elif [[ "$SERVER_IMPLEMENTED_ISPEC" == *" $name "* ]]; then
    # Either way is acceptable: exported as Triton does, or not at all.
    passed=$((passed + 1))
  else
    if [ $exported = 0 ]; then
      passed=$((passed + 1))
    else
      echo "EXPORTED BUT BACKEND-IMPLEMENTED (ISPEC): $name"
      failed=$((failed + 1))
    fi
  fi
done < <(sort -u <<<"$decls")

# Exported, yet not declared for the server by the headers.
# (An ISPEC name is reported above, or allowed.)
declared=$(awk '{ print $2 }' <<<"$decls")
while read -r name; do
  [ -n "$name" ] || continue
  echo "EXPORTED BUT NOT IN THE ABI: $name"
  failed=$((failed + 1))
done < <(comm -23 <(printf '%s\n' "$exports") <(sort -u <<<"$declared"))

# Triton's functions, each declared for the server here.
if [ ! -f "$TRITON_API" ]; then
  echo "check_exports: no such list: $TRITON_API" >&2
  exit 2
fi
declared_server=$(awk '$1 == "DECL" { print $2 }' <<<"$decls" | sort -u)
while read -r name; do
  [ -n "$name" ] || continue
  if grep -qxF -- "$name" <<<"$declared_server"; then
    passed=$((passed + 1))
  else
    echo "NOT DECLARED: $name (Triton's library implements it)"
    failed=$((failed + 1))
  fi
done < <(grep -v '^#' "$TRITON_API")

if [ "$soname" = libtritonserver.so ]; then
  passed=$((passed + 1))
else
  echo "SONAME: '${soname}', expected 'libtritonserver.so'"
  failed=$((failed + 1))
fi

if [ $((passed + failed)) -eq 0 ]; then
  echo "check_exports: no declarations found in the headers" >&2
  exit 2
fi
echo "check_exports: $passed passed, $failed failed"
[ $failed -eq 0 ]

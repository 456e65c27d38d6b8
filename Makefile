# inferd - top-level Makefile.
#
#   make            build build/inferd, build/lib/libtritonserver.so, the shipped backends
#   make run        install missing Debian packages, build, serve examples/model_repository
#   make test       build, check the layering (make check-layers,
#                   docs/architecture.md), run the unit (cmocka) and end-to-end
#                   (pytest) tests, and test-deploy
#   make test-deploy  render and validate the Kubernetes/KServe manifests of
#                   deploy/ (docs/deploy.md; needs kubectl, no cluster)
#   make test-asan  the same tests on an ASan/UBSan build (in build-asan/)
#   make image      build the container image localhost/inferd (podman;
#                   make image-full: localhost/inferd-full; make test-image
#                   tests it) (docs/deploy.md)
#   make fuzz       build the libFuzzer targets (clang, in build-fuzz/);
#                   with FUZZ_SECONDS=N also run each for N seconds
#                   (docs/fuzzing.md)
#
# Generated code (protoc-c output) and every object go to $(BUILD); nothing
# generated is committed.

BUILD ?= build
CC ?= cc
PROTOC_C ?= protoc-c
PYTHON ?= /usr/bin/python3
SAN ?=
OPT ?= -O2 -g

LLHTTP_DIR ?= /usr/share/llhttp
LLHTTP_INC ?= /usr/share/include/llhttp

# CUDA is optional: found when nvcc and cuda_runtime.h are present.
CUDA_HOME ?= /usr/local/cuda
HAVE_CUDA ?= $(shell test -f $(CUDA_HOME)/include/cuda_runtime.h && echo 1 || echo 0)
# nvcc builds the CUDA test backend only (test/models/backends/cuda_add).
NVCC ?= $(CUDA_HOME)/bin/nvcc

# ONNX Runtime's library for the onnxruntime backend, installed outside the
# tree by third_party/install-onnxruntime.sh (run by `make deps`), which reads
# the same variable: exported so both agree.
ORT_HOME ?= /opt/inferd/onnxruntime-1.30.0
export ORT_HOME

CPPFLAGS := -I. -Ibackend_api/include -I$(BUILD) -I$(LLHTTP_INC) -D_GNU_SOURCE
CFLAGS := -std=c11 -Wall -Wextra -Werror -fPIC -pthread $(OPT) -MMD -MP
LDFLAGS := -pthread
# Invariant checks (base/check.h) abort in the sanitizer, fuzz and -O0 builds.
ifneq ($(SAN)$(filter -O0,$(OPT)),)
CPPFLAGS += -DIFD_CHECKS=1
endif
ifeq ($(SAN),1)
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif
# The fuzz build (make fuzz): clang's coverage instrumentation for libFuzzer
# on every object, ASan and UBSan.
ifeq ($(SAN),fuzz)
CFLAGS += -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
  -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif
ifeq ($(HAVE_CUDA),1)
CPPFLAGS += -DIFD_HAVE_CUDA=1 -I$(CUDA_HOME)/include
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -lcudart
endif

# Objects depend on the flags they were built with: changing SAN, OPT or
# HAVE_CUDA for a build folder rebuilds it instead of mixing flavours.
FLAGS_STAMP := $(BUILD)/.flags
FLAGS_TEXT := $(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(CUDA_LIBS)
$(shell mkdir -p $(BUILD); echo '$(FLAGS_TEXT)' | cmp -s - $(FLAGS_STAMP) || echo '$(FLAGS_TEXT)' > $(FLAGS_STAMP))

LIB_DEPS := -luv -ljansson -lprotobuf-c -ldl -lm $(CUDA_LIBS)
# TLS (net/tls.c): OpenSSL from Debian's libssl-dev.
# gRPC message compression (net/grpc_zip.c): zlib from zlib1g-dev.
# Header-forward patterns (net/forward.c): PCRE2 from libpcre2-dev.
TLS_LIBS := -lssl -lcrypto
NET_LIBS := -lnghttp2 -lpcre2-8 $(TLS_LIBS) -lz
EXE_DEPS := $(NET_LIBS) $(LIB_DEPS)

# ---- sources -------------------------------------------------------------
# Core reads model configurations, so model_config.proto's code is part of the
# library; the gRPC service's messages (every other .proto) belong to frontend/.
PROTOS := $(wildcard proto/*.proto)
PROTO_C := $(PROTOS:%.proto=$(BUILD)/%.pb-c.c)
PROTO_H := $(PROTO_C:.c=.h)
LIB_PROTO_C := $(BUILD)/proto/model_config.pb-c.c
NET_PROTO_C := $(filter-out $(LIB_PROTO_C),$(PROTO_C))
# app/ is the wiring point: the program (main.c and the option files) goes
# into the executable, the runtime that builds a server and the embedded
# entry (TRITONSERVER_ServerNew) into the library.
APP_LIB_SRC := $(wildcard app/runtime.c app/embed.c)
LIB_SRC := $(wildcard base/*.c core/*.c sched/*.c backend_api/*.c cuda/*.c proto/*.c) $(APP_LIB_SRC)
# backend_api/ keeps one folder per ABI family (server objects, requests,
# memory, metrics, state, cache, repository agents, models, the in-process
# API); backend_api/backends/ holds the shipped backends, built apart.
LIB_SRC += $(filter-out backend_api/backends/%,$(wildcard backend_api/*/*.c))
NET_SRC := $(wildcard net/*.c)
FRONTEND_SRC := $(wildcard frontend/*.c)
APP_SRC := $(filter-out app/main.c $(APP_LIB_SRC),$(wildcard app/*.c))
LLHTTP_SRC := $(LLHTTP_DIR)/api.c $(LLHTTP_DIR)/http.c $(LLHTTP_DIR)/llhttp.c

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(LIB_PROTO_C:%.c=%.o)
# The transports (net/) and the applications over them (frontend/) go into
# the executable (and the test archive), not the library.
NET_OBJ := $(NET_SRC:%.c=$(BUILD)/obj/%.o) $(FRONTEND_SRC:%.c=$(BUILD)/obj/%.o) \
  $(NET_PROTO_C:%.c=%.o)
APP_OBJ := $(APP_SRC:%.c=$(BUILD)/obj/%.o)
LLHTTP_OBJ := $(patsubst $(LLHTTP_DIR)/%.c,$(BUILD)/obj/llhttp/%.o,$(LLHTTP_SRC))
MAIN_OBJ := $(BUILD)/obj/app/main.o

# A shipped backend is a folder of backend_api/backends/ with sources.
# common/ holds C shared by several backends (built into each that uses it);
# pytorch has its own rule below.
BACKENDS := $(filter-out common pytorch,$(sort $(notdir $(patsubst %/,%,$(dir $(wildcard backend_api/backends/*/*.c))))))
BACKEND_COMMON_C := $(wildcard backend_api/backends/common/*.c)
# Every folder with sources is a test backend (common/ holds their shared
# header only; cuda_add needs nvcc and has its own rule).
TEST_BACKENDS := $(filter-out common cuda_add,$(notdir $(wildcard test/models/backends/*)))
BACKEND_SO := $(foreach b,$(BACKENDS),$(BUILD)/backends/$(b)/libtriton_$(b).so)
# The Python backend's stub and module sit beside libtriton_python.so.
PY_STUB := $(BUILD)/backends/python/triton_python_backend_stub
PY_UTILS := $(BUILD)/backends/python/triton_python_backend_utils.py \
  $(BUILD)/backends/python/_pb_stub.py $(BUILD)/backends/python/_pb_wire.py \
  $(BUILD)/backends/python/_pb_model_config.py
BACKEND_SO += $(PY_STUB) $(PY_UTILS)
# The onnxruntime backend finds libonnxruntime.so.1 beside itself.
ORT_DIR := backend_api/backends/onnxruntime
ORT_LIB := $(BUILD)/backends/onnxruntime/libonnxruntime.so.1
BACKEND_SO += $(if $(filter onnxruntime,$(BACKENDS)),$(ORT_LIB))
# The pytorch backend is C++ (*.cc, plus C files of pure logic) and has its
# own rule below.
PT_DIR := backend_api/backends/pytorch
PT_SO := $(BUILD)/backends/pytorch/libtriton_pytorch.so
BACKEND_SO += $(if $(wildcard $(PT_DIR)/*.cc),$(PT_SO))
TEST_BACKEND_SO := $(foreach b,$(TEST_BACKENDS),$(BUILD)/test/backends/$(b)/libtriton_$(b).so)
# Test repository agents (test/models/repoagents/<name>/), laid out as a
# --repoagent-directory: build/test/repoagents/<name>/libtritonrepoagent_<name>.so.
TEST_AGENTS := $(notdir $(wildcard test/models/repoagents/*))
TEST_AGENT_SO := $(foreach a,$(TEST_AGENTS),$(BUILD)/test/repoagents/$(a)/libtritonrepoagent_$(a).so)
# Test cache plugins (test/models/caches/<name>): libtritoncache_<name>.so.
TEST_CACHES := $(notdir $(wildcard test/models/caches/*))
TEST_CACHE_SO := $(foreach c,$(TEST_CACHES),$(BUILD)/test/caches/$(c)/libtritoncache_$(c).so)

UNIT_SRC := $(wildcard test/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:test/unit/%.c=$(BUILD)/test/unit/%)
TEST_PROTOS := $(wildcard test/unit/*.proto)
TEST_PROTO_C := $(TEST_PROTOS:%.proto=$(BUILD)/%.pb-c.c)
TEST_PROTO_OBJ := $(TEST_PROTO_C:%.c=%.o)

# Fuzz targets (test/fuzz/fuzz_<name>.c): libFuzzer binaries in the fuzz
# build, and in every build a replay_<name> that runs the seed corpus and
# the crash reproducers through the same entry point (part of test-unit).
FUZZ_NAMES := $(patsubst test/fuzz/fuzz_%.c,%,$(wildcard test/fuzz/fuzz_*.c))
REPLAY_BIN := $(FUZZ_NAMES:%=$(BUILD)/test/fuzz/replay_%)
FUZZ_BIN := $(FUZZ_NAMES:%=$(BUILD)/test/fuzz/fuzz_%)

PERF_SRC := $(wildcard bench/perf/*.c)
PERF_OBJ := $(PERF_SRC:%.c=$(BUILD)/obj/%.o)
PERF := $(BUILD)/inferd-perf
# The container image's HEALTHCHECK (deploy/image/health_probe.c).
PROBE := $(BUILD)/inferd-health-probe
EMBED := $(BUILD)/examples/embed

LIBTS := $(BUILD)/lib/libtritonserver.so
ABI_MAP := backend_api/libtritonserver.map
ABI_DYNLIST := $(BUILD)/libtritonserver.dynlist
INFERD := $(BUILD)/inferd
TESTLIB := $(BUILD)/libifd_test.a
FAKE_NVML := $(BUILD)/test/libfake_nvml.so
GPU_TEST_BACKEND_SO := $(if $(filter 1,$(HAVE_CUDA)),$(if $(wildcard $(NVCC)),\
  $(BUILD)/test/backends/cuda_add/libtriton_cuda_add.so))

.PHONY: all run test test-unit test-e2e test-deploy test-gpu test-asan deps deps-check clean format-check check-layers bench \
  fuzz fuzz-bins example image image-full test-image deps-image
.DEFAULT_GOAL := all

all: $(INFERD) $(PROBE) $(LIBTS) $(BACKEND_SO) $(TEST_BACKEND_SO) $(TEST_AGENT_SO) $(TEST_CACHE_SO) $(if $(PERF_SRC),$(PERF)) \
  $(FAKE_NVML) $(GPU_TEST_BACKEND_SO) $(EMBED)

# ---- generated protobuf code ----------------------------------------------
$(BUILD)/%.pb-c.c $(BUILD)/%.pb-c.h: %.proto
	@mkdir -p $(dir $@)
	$(PROTOC_C) -I. --c_out=$(BUILD) $<

$(BUILD)/%.pb-c.o: $(BUILD)/%.pb-c.c $(FLAGS_STAMP)
	$(CC) $(CPPFLAGS) $(filter-out -Werror,$(CFLAGS)) -c -o $@ $<

# Every object may include any generated header.
$(LIB_OBJ) $(NET_OBJ) $(APP_OBJ) $(MAIN_OBJ) $(PERF_OBJ) $(UNIT_BIN): | $(PROTO_H)
$(UNIT_BIN): | $(TEST_PROTO_C:.c=.h)

# ---- objects ----------------------------------------------------------------
$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# llhttp comes as C sources in Debian's node-llhttp; it is not our code, so its
# warnings are not ours to fix.
$(BUILD)/obj/llhttp/%.o: $(LLHTTP_DIR)/%.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -I$(LLHTTP_INC) -std=c11 -fPIC $(OPT) -w $(filter -fsanitize%,$(CFLAGS)) -c -o $@ $<

# ---- the library backends link against ----------------------------------------
# It exports Triton's C ABI and nothing else ($(ABI_MAP)); core's own functions
# and the protobuf-c code are local to it.
$(LIBTS): $(LIB_OBJ) $(ABI_MAP)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libtritonserver.so -Wl,--version-script=$(ABI_MAP) $(LDFLAGS) \
	  -o $@ $(LIB_OBJ) $(LIB_DEPS)

# ---- the server ---------------------------------------------------------------
# frontend/ and app/ call core's ifd_* functions, which the library keeps to
# itself, so the executable links core's objects directly and stands in for
# the library: it exports the same ABI (--dynamic-list) and carries the
# soname libtritonserver.so. A backend's DT_NEEDED libtritonserver.so (Triton's and
# ours, linked with -ltritonserver, usually without an rpath) is then matched
# by ld.so against the already loaded executable, so dlopen loads no second
# copy of core and the backend's calls bind to the executable's functions.
# The executable does not need build/lib/ at run time.
EXPORT_ABI = -Wl,--dynamic-list=$(ABI_DYNLIST) -Wl,-soname,libtritonserver.so

# The dynamic list holds the patterns of the version script's global: block.
$(ABI_DYNLIST): $(ABI_MAP)
	@mkdir -p $(dir $@)
	{ echo '{'; sed -n '/^ *global:/,/^ *local:/{/^ *\(TRITON[A-Z]*\|INFERD\)_\*;/p}' $<; echo '};'; } > $@

$(INFERD): $(MAIN_OBJ) $(APP_OBJ) $(NET_OBJ) $(LLHTTP_OBJ) $(LIB_OBJ) $(ABI_DYNLIST)
	$(CC) $(LDFLAGS) $(EXPORT_ABI) -o $@ $(MAIN_OBJ) $(APP_OBJ) $(NET_OBJ) $(LLHTTP_OBJ) $(LIB_OBJ) \
	  $(EXE_DEPS)

# The health probe links libc only (no core object): the image runs it
# beside the server.
$(PROBE): deploy/image/health_probe.c $(FLAGS_STAMP)
	$(CC) -std=c11 -Wall -Wextra -Werror $(OPT) -o $@ $<

# ---- the embedding example (examples/embed/README.md) --------------------------
# An application of the in-process API, built as one outside the tree would
# be: Triton's public header and -ltritonserver only.
$(EMBED): examples/embed/embed.c $(LIBTS)
	@mkdir -p $(dir $@)
	$(CC) -Ibackend_api/include $(CFLAGS) -o $@ $< $(LDFLAGS) -L$(BUILD)/lib \
	  -Wl,-rpath,'$$ORIGIN/../lib' -ltritonserver

example: $(EMBED) $(BACKEND_SO)

# ---- the load generator (a client: none of the server's objects) ------------
$(PERF): $(PERF_OBJ) $(LLHTTP_OBJ) $(PROTO_C:%.c=%.o)
	$(CC) $(LDFLAGS) -o $@ $^ -luv -lnghttp2 -ljansson -lprotobuf-c -lm

# ---- backends (built exactly as a third-party backend would be) ---------------
define backend_rule
$(1)/$(2)/libtriton_$(2).so: $(wildcard $(3)/$(2)/*.c) $(wildcard $(3)/common/*.h) $(wildcard backend_api/include/triton/core/*.h) $(LIBTS)
	@mkdir -p $$(dir $$@)
	$$(CC) -std=c11 -Wall -Wextra -Werror -fPIC -pthread $$(OPT) $$(filter -fsanitize%,$$(CFLAGS)) \
	  -Ibackend_api/include -shared -o $$@ $(wildcard $(3)/$(2)/*.c) $$(COMMON_SRC) \
	  $$(LDFLAGS) -L$(BUILD)/lib -ltritonserver $(if $(filter identity,$(2)),-ljansson)
endef
$(foreach b,$(BACKENDS),$(eval $(call backend_rule,$(BUILD)/backends,$(b),backend_api/backends)))
$(foreach b,$(TEST_BACKENDS),$(eval $(call backend_rule,$(BUILD)/test/backends,$(b),test/models/backends)))
# Cache plugins are built the same way (TRITONCACHE_* from libtritonserver.so).
$(BUILD)/test/caches/%.so: $(LIBTS) $(wildcard backend_api/include/triton/core/*.h) \
  $(wildcard test/models/caches/*/*.c)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra -Werror -fPIC -pthread $(OPT) $(filter -fsanitize%,$(CFLAGS)) \
	  -Ibackend_api/include -shared -o $@ $(wildcard test/models/caches/$(notdir $(patsubst %/,%,$(dir $@)))/*.c) \
	  $(LDFLAGS) -L$(BUILD)/lib -ltritonserver

# Repository agents, built as a third-party agent would be.
define agent_rule
$(BUILD)/test/repoagents/$(1)/libtritonrepoagent_$(1).so: $(wildcard test/models/repoagents/$(1)/*.c) $(wildcard backend_api/include/triton/core/*.h) $(LIBTS)
	@mkdir -p $$(dir $$@)
	$$(CC) -std=c11 -Wall -Wextra -Werror -fPIC -pthread $$(OPT) $$(filter -fsanitize%,$$(CFLAGS)) \
	  -Ibackend_api/include -shared -o $$@ $(wildcard test/models/repoagents/$(1)/*.c) \
	  $$(LDFLAGS) -L$(BUILD)/lib -ltritonserver $(if $(filter identity,$(2)),-ljansson)
endef
$(foreach a,$(TEST_AGENTS),$(eval $(call agent_rule,$(a))))
# The checksum agent digests files with OpenSSL's libcrypto.
$(BUILD)/test/repoagents/checksum/libtritonrepoagent_checksum.so: private LDFLAGS += -lcrypto

# The Python backend (backend_api/backends/python): the stub embeds Debian's
# CPython (python3-embed; not the python3-config on PATH). No sanitizers in
# the stub: CPython's own allocations would read as leaks at its exit.
PY_DIR := backend_api/backends/python
$(BUILD)/backends/python/libtriton_python.so: $(PY_DIR)/ipc.h $(PY_DIR)/internal.h
# It parses JSON from its stubs (BLS, METRIC) with jansson, as the server does.
$(BUILD)/backends/python/libtriton_python.so: private LDFLAGS += -ljansson
$(PY_STUB): $(PY_DIR)/stub/stub.c $(PY_DIR)/ipc.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra -Werror $(OPT) $(shell pkg-config --cflags python3-embed) \
	  -o $@ $< -pthread $(shell pkg-config --libs python3-embed)
$(PY_UTILS): $(BUILD)/backends/python/%.py: $(PY_DIR)/%.py
	@mkdir -p $(dir $@)
	cp $< $@

# The onnxruntime backend (backend_api/backends/onnxruntime) declares the ONNX
# Runtime C API itself (ort_api.h), parses its config with jansson, and links
# the copy of libonnxruntime.so.1 that sits beside it (rpath $$ORIGIN), so the
# installed backend folder is self-contained.
$(BUILD)/backends/onnxruntime/libtriton_onnxruntime.so: $(wildcard $(ORT_DIR)/*.h) $(ORT_LIB) \
  $(BACKEND_COMMON_C)
$(BUILD)/backends/onnxruntime/libtriton_onnxruntime.so: private COMMON_SRC := $(BACKEND_COMMON_C)
$(BUILD)/backends/onnxruntime/libtriton_onnxruntime.so: private LDFLAGS += -ljansson \
  $(ORT_LIB) -Wl,-rpath,'$$ORIGIN'
$(ORT_LIB): $(ORT_HOME)/lib/libonnxruntime.so.1
	@mkdir -p $(dir $@)
	cp $< $@
$(ORT_HOME)/lib/libonnxruntime.so.1:
	@echo "ONNX Runtime is not installed in $(ORT_HOME):" \
	  "run make deps (or third_party/install-onnxruntime.sh)" >&2
	@exit 1

# The pytorch backend (backend_api/backends/pytorch): C++17 against Debian's
# libtorch-dev (1.13, CPU), whose headers are -isystem so that their warnings
# stay out of -Werror; every symbol it exports is the C backend ABI.
CXX ?= g++
PT_INC := /usr/include/torch/csrc/api/include
PT_LIBS := -ltorch -ltorch_cpu -lc10
PT_OBJ := $(patsubst $(PT_DIR)/%.cc,$(BUILD)/obj/$(PT_DIR)/%.o,$(wildcard $(PT_DIR)/*.cc)) \
  $(patsubst %.c,$(BUILD)/obj/pt/%.o,$(wildcard $(PT_DIR)/*.c) $(BACKEND_COMMON_C))
# Its C files (pure logic, unit-tested in C) and the shared ones.
$(BUILD)/obj/pt/%.o: %.c $(wildcard $(PT_DIR)/*.h) $(wildcard backend_api/backends/common/*.h) \
  $(wildcard backend_api/include/triton/core/*.h) $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra -Werror -fPIC -pthread $(OPT) \
	  $(filter -fsanitize%,$(CFLAGS)) -Ibackend_api/include -c -o $@ $<
$(BUILD)/obj/$(PT_DIR)/%.o: $(PT_DIR)/%.cc $(wildcard $(PT_DIR)/*.h) \
  $(wildcard backend_api/include/triton/core/*.h) $(FLAGS_STAMP) | $(PT_INC)
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -Wall -Wextra -Werror -fPIC -pthread $(OPT) \
	  $(filter -fsanitize%,$(CFLAGS)) -isystem $(PT_INC) -Ibackend_api/include \
	  -c -o $@ $<
$(PT_SO): $(PT_OBJ) $(PT_DIR)/exports.map $(LIBTS)
	@mkdir -p $(dir $@)
	$(CXX) -shared -Wl,--version-script=$(PT_DIR)/exports.map -o $@ $(PT_OBJ) \
	  $(LDFLAGS) -L$(BUILD)/lib -ltritonserver $(PT_LIBS) -ljansson
$(PT_INC):
	@echo "libtorch-dev is not installed: run make deps" \
	  "(third_party/install-deps.sh installs Debian's libtorch-dev)" >&2
	@exit 1

# ---- GPUs (docs/gpus.md) --------------------------------------------------------
# A fake libnvidia-ml for the GPU gauges' tests (test/unit/lib/fake_nvml.c).
$(FAKE_NVML): test/unit/lib/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra -Werror -fPIC -shared $(OPT) -o $@ $<

# The CUDA test backend (test/models/backends/cuda_add): its kernel goes
# through nvcc, the rest is C; built only when the toolkit is there.
ifeq ($(HAVE_CUDA),1)
# Hopper code, and PTX any newer GPU (or an older one down to Turing) JITs.
NVCC_ARCH ?= -gencode arch=compute_75,code=compute_75 -gencode arch=compute_90,code=sm_90
CUDA_ADD_DIR := test/models/backends/cuda_add
$(BUILD)/obj/test/backends/cuda_add/kernel.o: $(CUDA_ADD_DIR)/kernel.cu $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(NVCC) -O2 $(NVCC_ARCH) -Xcompiler -fPIC -c -o $@ $<
$(BUILD)/test/backends/cuda_add/libtriton_cuda_add.so: $(CUDA_ADD_DIR)/cuda_add.c \
  $(BUILD)/obj/test/backends/cuda_add/kernel.o $(wildcard backend_api/include/triton/core/*.h) $(LIBTS)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra -Werror -fPIC -pthread $(OPT) $(filter -fsanitize%,$(CFLAGS)) \
	  -I$(CUDA_HOME)/include -Ibackend_api/include -shared -o $@ $(filter %.c %.o,$^) \
	  $(LDFLAGS) -L$(BUILD)/lib -ltritonserver $(CUDA_LIBS)
endif

# `make test-gpu`: the tests that need a GPU (they skip, saying why, without
# one): test_cuda's GPU cases and the e2e tests marked gpu.
test-gpu: all $(BUILD)/test/unit/test_cuda
	IFD_TEST_GPU=1 $(BUILD)/test/unit/test_cuda
	INFERD_BUILD=$(BUILD) $(PYTHON) -m pytest -q -rs -m gpu test/e2e/test_gpu.py

# ---- tests --------------------------------------------------------------------
$(TESTLIB): $(LIB_OBJ) $(APP_OBJ) $(NET_OBJ) $(LLHTTP_OBJ) $(TEST_PROTO_OBJ)
	@rm -f $@
	ar rcs $@ $^

# These tests include the backends' shared C (backend_api/backends/common).
$(BUILD)/test/unit/test_batch_io $(BUILD)/test/unit/test_ort_backend $(BUILD)/test/unit/test_pt_names: $(BACKEND_COMMON_C) \
  $(wildcard backend_api/backends/common/*.h)

# test_oom injects allocation failures: inferd's own calls go through its
# wrappers.
$(BUILD)/test/unit/test_oom: TEST_LDFLAGS = \
  -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=mmap
$(BUILD)/test/unit/test_conn: TEST_LDFLAGS = \
  -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc

# A unit test program stands in for libtritonserver.so as build/inferd does, so
# a test that dlopens a built backend gets the test's own core (only the
# archive members the test links, so such a test references what it needs).
$(BUILD)/test/unit/%: test/unit/%.c $(TESTLIB) $(ABI_DYNLIST)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -I$(BUILD)/test/unit $(CFLAGS) -o $@ $< $(TESTLIB) $(LDFLAGS) $(EXPORT_ABI) \
	  $(TEST_LDFLAGS) $(LIB_DEPS) $(NET_LIBS) -lcmocka

# The in-process API's tests (test/unit/test_capi_*.c) are embedding
# applications: they use tritonserver.h only and link the built
# libtritonserver.so, whose default backend directory is then $(BUILD)/backends.
$(BUILD)/test/unit/test_capi_%: test/unit/test_capi_%.c $(LIBTS) $(BACKEND_SO) $(TEST_BACKEND_SO)
	@mkdir -p $(dir $@)
	$(CC) -Ibackend_api/include -D_GNU_SOURCE $(CFLAGS) -o $@ $< $(LDFLAGS) -L$(BUILD)/lib \
	  -Wl,-rpath,$(abspath $(BUILD)/lib) -ltritonserver -ljansson -lcmocka

$(BUILD)/test/fuzz/replay_%: test/fuzz/fuzz_%.c test/fuzz/replay.c $(wildcard test/fuzz/*.h) $(TESTLIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< test/fuzz/replay.c $(TESTLIB) $(LDFLAGS) \
	  $(LIB_DEPS) $(NET_LIBS)
$(REPLAY_BIN): | $(PROTO_H)

$(BUILD)/test/unit/test_cuda: $(FAKE_NVML)
# test_ort_api checks ort_api.h against the installed library (IFD_ORT_LIB in
# the environment overrides the path).
$(BUILD)/test/unit/test_ort_api: $(wildcard $(ORT_DIR)/*.h) $(ORT_HOME)/lib/libonnxruntime.so.1
$(BUILD)/test/unit/test_ort_api: private CPPFLAGS += \
  -DIFD_ORT_LIB='"$(ORT_HOME)/lib/libonnxruntime.so.1"'
test-unit: $(UNIT_BIN) $(REPLAY_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done
	@set -e; for t in $(FUZZ_NAMES); do echo "== replay $$t"; \
	  $(BUILD)/test/fuzz/replay_$$t test/fuzz/corpus/$$t test/fuzz/regress/$$t; done

# ---- fuzzing (docs/fuzzing.md) ------------------------------------------------
# `make fuzz` builds the targets with clang in $(FUZZ_BUILD); with
# FUZZ_SECONDS=N it runs each for N seconds, one after the other, starting
# from its seeds (test/fuzz/corpus/<name>, test/fuzz/regress/<name>; and
# test/fuzz/<name>.dict, a libFuzzer dictionary, where there is one). New
# inputs go to $(FUZZ_BUILD)/corpus/<name>, a crash, leak or timeout to
# $(FUZZ_BUILD)/crashes/<name>/ and fails the run.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?=
FUZZ_FLAGS ?= -max_len=65536 -timeout=20 -rss_limit_mb=4096
$(BUILD)/test/fuzz/fuzz_%: test/fuzz/fuzz_%.c $(wildcard test/fuzz/*.h) $(TESTLIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(TESTLIB) $(LDFLAGS) \
	  $(LIB_DEPS) $(NET_LIBS)
$(FUZZ_BIN): | $(PROTO_H)

fuzz-bins: $(FUZZ_BIN)

fuzz:
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=clang SAN=fuzz HAVE_CUDA=0 OPT="-O1 -g" fuzz-bins
ifneq ($(FUZZ_SECONDS),)
	@set -e; for t in $(FUZZ_NAMES); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/crashes/$$t; \
	  echo "== fuzz $$t for $(FUZZ_SECONDS)s"; seeds=; \
	  for d in test/fuzz/corpus/$$t test/fuzz/regress/$$t; do \
	    if [ -d $$d ]; then seeds="$$seeds $$d"; fi; done; \
	  dict=; if [ -f test/fuzz/$$t.dict ]; then dict=-dict=test/fuzz/$$t.dict; fi; \
	  $(FUZZ_BUILD)/test/fuzz/fuzz_$$t $(FUZZ_FLAGS) $$dict -max_total_time=$(FUZZ_SECONDS) \
	    -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/crashes/$$t/ \
	    $(FUZZ_BUILD)/corpus/$$t $$seeds \
	    2>$(FUZZ_BUILD)/fuzz-$$t.log || { tail -n 60 $(FUZZ_BUILD)/fuzz-$$t.log; exit 1; }; \
	  grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|Done)' \
	    $(FUZZ_BUILD)/fuzz-$$t.log || true; \
	done
endif

test-e2e: all
	INFERD_BUILD=$(BUILD) $(PYTHON) -m pytest -q test/e2e

# deploy/'s manifests: rendered with `kubectl kustomize`, validated against
# the Kubernetes and KServe schemas (third_party/install-kubernetes-models.sh),
# cross-checked, their inferd flags run through $(INFERD) (docs/deploy.md).
test-deploy: $(INFERD)
	INFERD_BUILD=$(BUILD) $(PYTHON) -m pytest -q test/deploy

test: deps-check
	$(MAKE) all check-layers test-unit
	$(MAKE) test-e2e
	$(MAKE) test-deploy

# LeakSanitizer skips what test/lsan.supp names (leaks inside prebuilt,
# uninstrumented libraries such as ONNX Runtime's).
test-asan:
	LSAN_OPTIONS=suppressions=$(abspath test/lsan.supp) $(MAKE) BUILD=build-asan SAN=1 HAVE_CUDA=0 OPT="-O1 -g" all test-unit test-e2e

bench: deps-check
	$(MAKE) all
	bash bench/run.sh

deps:
	bash third_party/install-deps.sh

# ---- container images (deploy/image/, docs/deploy.md) --------------------------
# Podman, runc and tini are installed when missing (third_party/image-packages.txt),
# by these targets only: make run and make test do not need them.
IMAGE ?= localhost/inferd:latest
IMAGE_FULL ?= localhost/inferd-full:latest
deps-image: deps-check
	@bash third_party/install-deps.sh --check third_party/image-packages.txt || \
	  bash third_party/install-deps.sh third_party/image-packages.txt

image: deps-image
	$(MAKE) all
	BUILD=$(BUILD) bash deploy/image/build.sh inferd $(IMAGE)

image-full: deps-image
	$(MAKE) all
	BUILD=$(BUILD) bash deploy/image/build.sh inferd-full $(IMAGE_FULL)

# Builds its own image (IMAGE_TEST_FULL=1: the full one too), runs it,
# removes it: test/image/test_image.py.
IMAGE_TEST_FULL ?=
test-image: deps-image
	$(MAKE) all
	INFERD_BUILD=$(BUILD) IMAGE_TEST_FULL=$(IMAGE_TEST_FULL) $(PYTHON) -m pytest -q -s -rs test/image

deps-check:
	@bash third_party/install-deps.sh --check || bash third_party/install-deps.sh

run: deps
	$(MAKE) all
	$(INFERD) --model-repository=examples/model_repository --backend-directory=$(BUILD)/backends

# The layering check (test/layers/check_layers.py): the include arrows
# docs/architecture.md allows, no circle of more than two files in the
# folders it names (from the built objects), no product file over 900 lines.
check-layers: $(LIB_OBJ) $(APP_OBJ) $(NET_OBJ) $(MAIN_OBJ)
	BUILD=$(BUILD) $(PYTHON) test/layers/check_layers.py

format-check:
	clang-format --dry-run --Werror $(shell git ls-files '*.c' '*.h')

clean:
	rm -rf build build-asan build-fuzz

-include $(shell find $(BUILD)/obj $(BUILD)/test -name '*.d' 2>/dev/null)

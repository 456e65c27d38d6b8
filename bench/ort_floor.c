/*
 * bench/ort_floor.c - the floor for the onnx bench section: one model run in
 * a C loop straight on ONNX Runtime, no server around it.
 *
 * It dlopens libonnxruntime.so.1, asks for the API version of our own
 * declaration (backend_api/backends/onnxruntime/ort_api.h), creates one
 * session on MODEL with default session options (what the backend uses when
 * the model configuration sets no parameter: ORT's default thread pools,
 * graph optimization level and memory arena), then runs it in a loop with
 * the same input every time. The input and every output live in buffers of
 * ours bound to OrtValues once, so a run is what ORT itself does for one
 * inference and nothing else (Run writes the outputs into our buffers).
 *
 * It reports, as one JSON object on stdout: runs, CPU per run (the process's
 * CPU clock, every thread: ORT's pool threads included), wall time per run,
 * and the process's peak and current resident memory (VmHWM, VmRSS from
 * /proc/self/status). `--bare` reports the memory of the same program that
 * never opens the library: footprint of one session = HWM - bare HWM.
 *
 *   ort_floor [--lib PATH] [--seconds S] [--warmup N] [--batch B]
 *             [--input FILE] MODEL
 *   ort_floor --bare
 *
 * --input FILE: the input tensor's rows from FILE (raw little-endian values
 * of the input's element type; the batch is the file size / the row size),
 * one run, then every output's values as JSON instead of the loop (to check
 * the runtime's answers against another evaluation of the model).
 *
 * Exit status: 0, or 1 with a message on stderr. Handles only models whose
 * first input and every output are tensors of fixed-size element types whose
 * dimensions, the first (batch) one excepted, are known.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_api/backends/onnxruntime/ort_api.h"

#define DEFAULT_LIB "/opt/inferd/onnxruntime-1.30.0/lib/libonnxruntime.so.1"
#define MAX_OUTPUTS 8
#define MAX_DIMS 8

typedef struct {
  char *name;                     /* owned: ORT's default allocator */
  ONNXTensorElementDataType type; /* element type */
  int64_t dims[MAX_DIMS];         /* dims[0] replaced by the batch */
  size_t ndims;
  size_t bytes;    /* the whole tensor for the batch */
  void *buf;       /* owned: malloc */
  OrtValue *value; /* owned: over buf */
} tensor_t;

static const OrtApi *ort;

static void die(const char *what, const char *detail) {
  fprintf(stderr, "ort_floor: %s%s%s\n", what, detail ? ": " : "",
          detail ? detail : "");
  exit(1);
}

/* Dies with ORT's message when status is an error. */
static void check(OrtStatus *status, const char *what) {
  if (status != NULL) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ort->GetErrorMessage(status));
    ort->ReleaseStatus(status);
    die(what, msg);
  }
}

static size_t elem_size(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      return 1;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
      return 2;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32:
      return 4;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      return 8;
    default:
      return 0;
  }
}

/* A field of /proc/self/status in KiB, or -1. */
static long status_kib(const char *field) {
  char line[256];
  size_t n = strlen(field);
  long v = -1;
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, field, n) == 0 && line[n] == ':') {
      v = strtol(line + n + 1, NULL, 10);
      break;
    }
  }
  fclose(f);
  return v;
}

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Fills t from the session's type info for one input or output; the batch
 * dimension (the first, when dynamic) becomes `batch`. */
static void describe(OrtTypeInfo *info, int64_t batch, tensor_t *t) {
  const OrtTensorTypeAndShapeInfo *ti = NULL;
  size_t i, count = 1, esz;

  check(ort->CastTypeInfoToTensorInfo(info, &ti), "CastTypeInfoToTensorInfo");
  if (ti == NULL) die(t->name, "not a tensor");
  check(ort->GetTensorElementType(ti, &t->type), "GetTensorElementType");
  check(ort->GetDimensionsCount(ti, &t->ndims), "GetDimensionsCount");
  if (t->ndims == 0 || t->ndims > MAX_DIMS) die(t->name, "unsupported rank");
  check(ort->GetDimensions(ti, t->dims, t->ndims), "GetDimensions");
  if (t->dims[0] < 0) t->dims[0] = batch;
  for (i = 0; i < t->ndims; i++) {
    if (t->dims[i] < 0) die(t->name, "a dynamic dimension after the first");
    count *= (size_t)t->dims[i];
  }
  esz = elem_size(t->type);
  if (esz == 0) die(t->name, "unsupported element type");
  t->bytes = count * esz;
}

static void bind(const OrtMemoryInfo *mem, tensor_t *t) {
  t->buf = calloc(1, t->bytes ? t->bytes : 1);
  if (t->buf == NULL) die("calloc", strerror(errno));
  check(ort->CreateTensorWithDataAsOrtValue(mem, t->buf, t->bytes, t->dims,
                                            t->ndims, t->type, &t->value),
        "CreateTensorWithDataAsOrtValue");
}

static void print_values(const tensor_t *t) {
  size_t i, n = t->bytes / elem_size(t->type);
  printf("\"%s\": [", t->name);
  for (i = 0; i < n; i++) {
    if (i) printf(",");
    switch (t->type) {
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
        printf("%.9g", (double)((const float *)t->buf)[i]);
        break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
        printf("%.17g", ((const double *)t->buf)[i]);
        break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
        printf("%lld", (long long)((const int64_t *)t->buf)[i]);
        break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
        printf("%d", (int)((const int32_t *)t->buf)[i]);
        break;
      default:
        printf("null");
    }
  }
  printf("]");
}

static void usage(void) {
  fprintf(stderr,
          "usage: ort_floor [--lib PATH] [--seconds S] [--warmup N] "
          "[--batch B] [--input FILE] MODEL\n       ort_floor --bare\n");
  exit(2);
}

int main(int argc, char **argv) {
  const char *lib = DEFAULT_LIB, *model = NULL, *input_file = NULL;
  double seconds = 10, t0, c0, t1, c1;
  long warmup = 2000, runs = 0, i;
  int64_t batch = 1;
  void *dl;
  const OrtApiBase *(*get_base)(void);
  OrtEnv *env = NULL;
  OrtSessionOptions *opts = NULL;
  OrtSession *session = NULL;
  OrtMemoryInfo *mem = NULL;
  OrtAllocator *alloc = NULL;
  OrtTypeInfo *info = NULL;
  tensor_t in = {0}, out[MAX_OUTPUTS] = {{0}};
  const char *out_names[MAX_OUTPUTS];
  OrtValue *out_values[MAX_OUTPUTS];
  const OrtValue *in_values[1];
  size_t n_out = 0, k;
  long hwm_loaded, threads;

  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--bare") == 0) {
      /* The same program, never touching the library. */
      printf("{\"bare\": true, \"vm_hwm_kib\": %ld, \"vm_rss_kib\": %ld}\n",
             status_kib("VmHWM"), status_kib("VmRSS"));
      return 0;
    } else if (strcmp(argv[i], "--lib") == 0 && i + 1 < argc) {
      lib = argv[++i];
    } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = atof(argv[++i]);
    } else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) {
      warmup = atol(argv[++i]);
    } else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) {
      batch = atol(argv[++i]);
    } else if (strcmp(argv[i], "--input") == 0 && i + 1 < argc) {
      input_file = argv[++i];
    } else if (argv[i][0] != '-' && model == NULL) {
      model = argv[i];
    } else {
      usage();
    }
  }
  if (model == NULL || batch < 1 || seconds <= 0) usage();

  dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (dl == NULL) die("dlopen", dlerror());
  *(void **)&get_base = dlsym(dl, "OrtGetApiBase");
  if (get_base == NULL) die("dlsym OrtGetApiBase", dlerror());
  ort = get_base()->GetApi(IFD_ORT_API_VERSION);
  if (ort == NULL) die("the library does not serve our API version", lib);

  check(ort->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "ort_floor", &env),
        "CreateEnv");
  check(ort->CreateSessionOptions(&opts), "CreateSessionOptions");
  check(ort->CreateSession(env, model, opts, &session), "CreateSession");
  check(ort->GetAllocatorWithDefaultOptions(&alloc), "allocator");
  check(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mem),
        "CreateCpuMemoryInfo");

  check(ort->SessionGetInputName(session, 0, alloc, &in.name), "input name");
  check(ort->SessionGetInputTypeInfo(session, 0, &info), "input type");
  if (input_file != NULL) {
    /* The batch is what the file holds. */
    FILE *f = fopen(input_file, "rb");
    long size;
    size_t row;
    if (f == NULL) die(input_file, strerror(errno));
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    describe(info, 1, &in);
    row = in.bytes;
    if (size <= 0 || row == 0 || (size_t)size % row != 0)
      die(input_file, "not a whole number of input rows");
    batch = (int64_t)((size_t)size / row);
    describe(info, batch, &in);
    bind(mem, &in);
    rewind(f);
    if (fread(in.buf, 1, in.bytes, f) != in.bytes) die(input_file, "short");
    fclose(f);
  } else {
    describe(info, batch, &in);
    bind(mem, &in);
    for (k = 0; k < in.bytes; k++) ((unsigned char *)in.buf)[k] = k % 7 * 9;
  }
  ort->ReleaseTypeInfo(info);

  check(ort->SessionGetOutputCount(session, &n_out), "output count");
  if (n_out == 0 || n_out > MAX_OUTPUTS) die("unsupported output count", NULL);
  for (k = 0; k < n_out; k++) {
    check(ort->SessionGetOutputName(session, k, alloc, &out[k].name),
          "output name");
    check(ort->SessionGetOutputTypeInfo(session, k, &info), "output type");
    describe(info, batch, &out[k]);
    ort->ReleaseTypeInfo(info);
    bind(mem, &out[k]);
    out_names[k] = out[k].name;
    out_values[k] = out[k].value;
  }
  in_values[0] = in.value;

  if (input_file != NULL) {
    check(ort->Run(session, NULL, (const char *const *)&in.name, in_values, 1,
                   out_names, n_out, out_values),
          "Run");
    printf("{\"batch\": %lld", (long long)batch);
    for (k = 0; k < n_out; k++) {
      printf(", ");
      print_values(&out[k]);
    }
    printf("}\n");
    return 0;
  }

  for (i = 0; i < warmup; i++)
    check(ort->Run(session, NULL, (const char *const *)&in.name, in_values, 1,
                   out_names, n_out, out_values),
          "Run");
  t0 = clock_s(CLOCK_MONOTONIC);
  c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  do {
    for (i = 0; i < 64; i++)
      check(ort->Run(session, NULL, (const char *const *)&in.name, in_values, 1,
                     out_names, n_out, out_values),
            "Run");
    runs += 64;
    t1 = clock_s(CLOCK_MONOTONIC);
  } while (t1 - t0 < seconds);
  c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  hwm_loaded = status_kib("VmHWM");
  threads = status_kib("Threads"); /* not KiB: the count, same format */

  printf(
      "{\"model\": \"%s\", \"batch\": %lld, \"runs\": %ld, "
      "\"seconds\": %.3f, \"cpu_s\": %.6f, \"cpu_us_per_run\": %.3f, "
      "\"wall_us_per_run\": %.3f, \"threads\": %ld, \"vm_hwm_kib\": %ld, "
      "\"vm_rss_kib\": %ld, \"ort_version\": \"%s\"}\n",
      model, (long long)batch, runs, t1 - t0, c1 - c0,
      (c1 - c0) * 1e6 / (double)runs, (t1 - t0) * 1e6 / (double)runs, threads,
      hwm_loaded, status_kib("VmRSS"), get_base()->GetVersionString());

  for (k = 0; k < n_out; k++) {
    ort->ReleaseValue(out[k].value);
    free(out[k].buf);
    check(ort->AllocatorFree(alloc, out[k].name), "AllocatorFree");
  }
  ort->ReleaseValue(in.value);
  free(in.buf);
  check(ort->AllocatorFree(alloc, in.name), "AllocatorFree");
  ort->ReleaseMemoryInfo(mem);
  ort->ReleaseSession(session);
  ort->ReleaseSessionOptions(opts);
  ort->ReleaseEnv(env);
  return 0;
}

/*
 * bench/torch_floor.cc - the floor for the pytorch bench section: one
 * TorchScript module run in a C++ loop straight on libtorch, no server
 * around it (the counterpart of bench/ort_floor.c for ONNX Runtime).
 *
 * It loads MODEL with torch::jit::load onto the CPU and puts the module in
 * eval mode, as the PyTorch backend does with its defaults (no parameter in
 * the model configuration: libtorch's own thread pools and graph executor
 * settings, INFERENCE_MODE true), then calls forward() in a loop under
 * c10::InferenceMode with the same input every time: one FP32 tensor
 * [batch, N], N given by --width (the module's signature does not say it).
 * libtorch allocates each run's outputs itself; the loop keeps the result
 * until the next run.
 *
 * It reports, as one JSON object on stdout: runs, CPU per run (the process's
 * CPU clock, every thread: libtorch's pool threads included), wall time per
 * run, libtorch's intra-op thread count, the process's thread count and its
 * peak and current resident memory (VmHWM, VmRSS from /proc/self/status).
 * `--bare` reports the memory of the same program that never loads a module
 * (libtorch is linked, so its libraries are mapped in both): footprint of
 * one module and its runs = HWM - bare HWM.
 *
 *   torch_floor [--seconds S] [--warmup N] [--batch B] [--width N]
 *               [--input FILE] MODEL
 *   torch_floor --bare
 *
 * --input FILE: the input's rows from FILE (raw little-endian FP32, --width
 * values a row; the batch is the file size / the row size), one run, then
 * every output tensor's values as JSON instead of the loop.
 *
 * Exit status: 0, or 1 with a message on stderr. Handles modules whose
 * forward takes one FP32 tensor and returns a tensor or a tuple of tensors.
 */
#include <ATen/Parallel.h>
#include <torch/script.h>
#include <torch/version.h>

#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const std::string &what, const std::string &detail) {
  std::fprintf(stderr, "torch_floor: %s%s%s\n", what.c_str(),
               detail.empty() ? "" : ": ", detail.c_str());
  std::exit(1);
}

/* A field of /proc/self/status (its number: KiB, or a count), or -1. */
long status_field(const char *field) {
  char line[256];
  size_t n = std::strlen(field);
  long v = -1;
  FILE *f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, field, n) == 0 && line[n] == ':') {
      v = std::strtol(line + n + 1, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return v;
}

double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The result of forward() as a list of tensors. */
std::vector<at::Tensor> tensors_of(const c10::IValue &res) {
  std::vector<at::Tensor> out;
  if (res.isTensor()) {
    out.push_back(res.toTensor());
  } else if (res.isTuple()) {
    for (const auto &v : res.toTupleRef().elements()) {
      if (!v.isTensor()) die("forward", "a tuple element is not a tensor");
      out.push_back(v.toTensor());
    }
  } else {
    die("forward", "the result is neither a tensor nor a tuple");
  }
  return out;
}

void print_values(size_t k, const at::Tensor &t0) {
  at::Tensor t = t0.contiguous();
  int64_t n = t.numel();
  std::printf("\"output%zu\": [", k);
  for (int64_t i = 0; i < n; i++) {
    if (i) std::printf(",");
    switch (t.scalar_type()) {
      case at::kFloat:
        std::printf("%.9g", (double)t.data_ptr<float>()[i]);
        break;
      case at::kDouble:
        std::printf("%.17g", t.data_ptr<double>()[i]);
        break;
      case at::kLong:
        std::printf("%lld", (long long)t.data_ptr<int64_t>()[i]);
        break;
      case at::kInt:
        std::printf("%d", (int)t.data_ptr<int32_t>()[i]);
        break;
      default:
        std::printf("null");
    }
  }
  std::printf("]");
}

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: torch_floor [--seconds S] [--warmup N] [--batch B] "
               "[--width N] [--input FILE] MODEL\n       torch_floor --bare\n");
  std::exit(2);
}

int run(int argc, char **argv) {
  const char *model = nullptr, *input_file = nullptr;
  double seconds = 10, t0, c0, t1, c1;
  long warmup = 2000, runs = 0;
  int64_t batch = 1, width = 64;

  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--bare") == 0) {
      std::printf("{\"bare\": true, \"vm_hwm_kib\": %ld, \"vm_rss_kib\": %ld}\n",
                  status_field("VmHWM"), status_field("VmRSS"));
      return 0;
    } else if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) {
      warmup = std::atol(argv[++i]);
    } else if (std::strcmp(argv[i], "--batch") == 0 && i + 1 < argc) {
      batch = std::atol(argv[++i]);
    } else if (std::strcmp(argv[i], "--width") == 0 && i + 1 < argc) {
      width = std::atol(argv[++i]);
    } else if (std::strcmp(argv[i], "--input") == 0 && i + 1 < argc) {
      input_file = argv[++i];
    } else if (argv[i][0] != '-' && model == nullptr) {
      model = argv[i];
    } else {
      usage();
    }
  }
  if (model == nullptr || batch < 1 || width < 1 || seconds <= 0) usage();

  c10::InferenceMode guard;
  torch::jit::Module module = torch::jit::load(model, torch::Device(torch::kCPU));
  module.eval();

  at::Tensor input;
  if (input_file != nullptr) {
    std::ifstream f(input_file, std::ios::binary);
    if (!f) die(input_file, "cannot open");
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)),
                            std::istreambuf_iterator<char>());
    size_t row = (size_t)width * sizeof(float);
    if (bytes.empty() || bytes.size() % row != 0)
      die(input_file, "not a whole number of input rows");
    batch = (int64_t)(bytes.size() / row);
    input = torch::empty({batch, width}, torch::kFloat);
    std::memcpy(input.data_ptr<float>(), bytes.data(), bytes.size());
  } else {
    input = torch::empty({batch, width}, torch::kFloat);
    float *p = input.data_ptr<float>();
    for (int64_t k = 0; k < batch * width; k++) p[k] = (float)(k % 7 * 9) / 64;
  }
  std::vector<c10::IValue> args{input};

  if (input_file != nullptr) {
    std::vector<at::Tensor> outs = tensors_of(module.forward(args));
    std::printf("{\"batch\": %lld", (long long)batch);
    for (size_t k = 0; k < outs.size(); k++) {
      std::printf(", ");
      print_values(k, outs[k]);
    }
    std::printf("}\n");
    return 0;
  }

  c10::IValue res;
  for (long i = 0; i < warmup; i++) res = module.forward(args);
  size_t n_out = tensors_of(res).size();
  t0 = clock_s(CLOCK_MONOTONIC);
  c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  do {
    for (int i = 0; i < 64; i++) res = module.forward(args);
    runs += 64;
    t1 = clock_s(CLOCK_MONOTONIC);
  } while (t1 - t0 < seconds);
  c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  long hwm_loaded = status_field("VmHWM");
  long threads = status_field("Threads");

  std::printf(
      "{\"model\": \"%s\", \"batch\": %lld, \"runs\": %ld, \"outputs\": %zu, "
      "\"seconds\": %.3f, \"cpu_s\": %.6f, \"cpu_us_per_run\": %.3f, "
      "\"wall_us_per_run\": %.3f, \"intra_op_threads\": %d, \"threads\": %ld, "
      "\"vm_hwm_kib\": %ld, \"vm_rss_kib\": %ld, \"torch_version\": \"%s\"}\n",
      model, (long long)batch, runs, n_out, t1 - t0, c1 - c0,
      (c1 - c0) * 1e6 / (double)runs, (t1 - t0) * 1e6 / (double)runs,
      at::get_num_threads(), threads, hwm_loaded, status_field("VmRSS"),
      TORCH_VERSION);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception &ex) {
    die("libtorch", ex.what());
  }
}

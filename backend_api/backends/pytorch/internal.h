/*
 * backend_api/backends/pytorch/internal.h - what the PyTorch backend's files
 * share: the model and instance state, the configuration helpers and the
 * execute entry.
 *
 * C++ only inside this backend (it wraps libtorch's C++ API); the only
 * symbols it exports are the TRITONBACKEND_* entry points of pytorch.cc,
 * and no exception crosses them: every function declared here that can meet
 * a libtorch exception catches it and answers a TRITONSERVER_Error.
 */
#ifndef IFD_BACKENDS_PYTORCH_INTERNAL_H
#define IFD_BACKENDS_PYTORCH_INTERNAL_H

#include <jansson.h>
#include <ATen/Parallel.h>
#include <torch/script.h>
#include <torch/version.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "../common/batch_io.h"
#include "../common/be_util.h"
#include "triton/core/tritonbackend.h"

#include "pt_names.h" /* pt_kind_t: where an input of forward() comes from */

#define PT_ERR_ARG TRITONSERVER_ERROR_INVALID_ARG
#define PT_ERR_INTERNAL TRITONSERVER_ERROR_INTERNAL

/* One input or output of the model. m->inputs holds the configuration's
 * inputs in order, then the control inputs, the states' inputs and the
 * batch inputs' targets; m->outputs the configuration's outputs in order,
 * then the states' outputs that are no configuration output. */
struct pt_io_t {
  std::string name;
  TRITONSERVER_DataType dtype = TRITONSERVER_TYPE_INVALID;
  c10::ScalarType stype = c10::ScalarType::Undefined;
  pt_kind_t kind = PT_IO_INPUT; /* inputs only */
  bool ragged = false;          /* inputs: allow_ragged_batch */
  int batch_input = -1;         /* PT_IO_BATCH_INPUT: its `batch_input` */
  bool is_output = true;        /* outputs: a configuration output */
  bool is_state = false;        /* outputs: a state's output_name */
  std::string scatter_source;   /* outputs: BATCH_SCATTER_WITH_INPUT_SHAPE */
  std::vector<int64_t> dims;    /* outputs: the configured dims */
};

/* A model: its configuration and parameters, read once in
 * TRITONBACKEND_ModelInitialize; read-only afterwards except `shared`. */
struct pt_model_t {
  TRITONBACKEND_Model *tm = nullptr; /* borrowed: outlives the model state */
  std::string name;
  json_t *config = nullptr; /* owned */
  int max_batch_size = 0;
  std::string path; /* <repository>/<version>/<file> */
  std::vector<pt_io_t> inputs, outputs;
  ifd_batch_input_t *batch_inputs = nullptr; /* owned, n_batch_inputs */
  size_t n_batch_inputs = 0;
  size_t n_states = 0; /* sequence_batching.state entries */

  /* Triton's parameters, with Triton's defaults. A pair is (set, value):
   * an unset JIT switch leaves libtorch's own default alone. */
  bool optimized_execution = true;
  bool inference_mode = true;
  bool cache_cleaning = false;
  bool weight_sharing = false;
  std::pair<bool, bool> jit_profiling{false, false};
  std::pair<bool, bool> jit_executor{false, false};
  std::pair<bool, bool> tensor_fuser{false, false};
  int intra_op_threads = 0; /* 0: libtorch's default */
  int inter_op_threads = 0;

  /* With ENABLE_WEIGHT_SHARING, the module the CPU instances share. */
  std::mutex mu;
  std::shared_ptr<torch::jit::Module> shared; /* guarded by mu */
};

/* One instance: its own module (or the model's shared one) and where each
 * configuration input goes in forward()'s arguments. Used only on the
 * instance's own thread. */
struct pt_instance_t {
  pt_model_t *model = nullptr;               /* borrowed: outlives it */
  TRITONBACKEND_ModelInstance *ti = nullptr; /* borrowed */
  std::string name;
  std::shared_ptr<torch::jit::Module> module; /* owned (or shared) */
  bool dict_input = false;      /* forward(self, Dict[str, Tensor]) */
  size_t n_args = 0;            /* forward()'s arguments less self */
  std::vector<size_t> in_index; /* per model input: its argument */
  std::vector<int> out_index;   /* per model output: its position, or
                                   -1 where looked up by name (a dict) */
  /* The tensors the last run gathered its small inputs into, kept for the
   * next run to fill again (pt_exec.cc, input_tensor()). */
  std::vector<std::pair<const pt_io_t *, torch::Tensor>> reuse; /* owned */
};

/* ---- pt_util.cc ---- */
void ifd_pt_log(TRITONSERVER_LogLevel level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Logs e (owned, freed) with `what` in front; NULL is no error. */
void ifd_pt_log_err(TRITONSERVER_Error *e, const char *what);
/* The text of a caught exception: c10::Error's message without libtorch's
 * C++ backtrace, any other std::exception's what(). */
std::string ifd_pt_what(const std::exception &ex);
/* "TYPE_FP32" -> TRITONSERVER_TYPE_FP32 and its torch type. Returns false
 * when libtorch has no such type (or the name is unknown). */
bool ifd_pt_config_type(const char *config_name, TRITONSERVER_DataType *dt,
                        c10::ScalarType *st);
/* The Triton type of a torch type, TRITONSERVER_TYPE_INVALID if none. */
TRITONSERVER_DataType ifd_pt_triton_type(c10::ScalarType st);
/* Model parameter `key`'s string_value, or NULL. */
const char *ifd_pt_param(const json_t *config, const char *key);
/* Parses parameter `key` as Triton does: absent leaves *out alone. */
TRITONSERVER_Error *ifd_pt_param_bool(const json_t *config, const char *key,
                                      bool *set, bool *out);
TRITONSERVER_Error *ifd_pt_param_int(const json_t *config, const char *key,
                                     bool *set, int *out);

/* ---- pt_model.cc ---- */
/* Reads the model's configuration and parameters. On success *out is owned
 * by the caller (ifd_pt_model_free). */
TRITONSERVER_Error *ifd_pt_model_new(TRITONBACKEND_Model *tm, pt_model_t **out);
void ifd_pt_model_free(pt_model_t *m);
/* Loads (or, with weight sharing, reuses) the module on the calling
 * (instance) thread and binds the configuration's inputs and outputs to
 * forward()'s arguments and results. On success *out is the caller's. */
TRITONSERVER_Error *ifd_pt_instance_new(pt_model_t *m,
                                        TRITONBACKEND_ModelInstance *ti,
                                        pt_instance_t **out);
void ifd_pt_instance_free(pt_instance_t *in);

/* ---- pt_exec.cc ---- */
/* Runs the requests (owned from here: each is answered and released). */
void ifd_pt_execute(pt_instance_t *in, TRITONBACKEND_Request **requests,
                    uint32_t n);

#endif

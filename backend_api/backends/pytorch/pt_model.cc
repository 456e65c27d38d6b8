/*
 * backend_api/backends/pytorch/pt_model.cc - a PyTorch model: its
 * configuration, Triton's parameters, and per instance the TorchScript
 * module and the binding of the configuration's inputs and outputs to
 * forward()'s arguments and results.
 *
 * The binding follows Triton's pytorch_libtorch rules (docs/backends.md,
 * "PyTorch backend"): inputs named after forward()'s arguments when every
 * configuration input is one, else <name>__<index> names bound by index,
 * else the configuration's order (with Triton's warning); a forward() taking
 * one Dict[str, Tensor] gets every input under its configuration name.
 * Outputs are <name>__<index> or in the configuration's order; a dictionary
 * result is read by output name. The naming rules themselves are pure logic
 * in pt_names.c; what needs libtorch (forward()'s schema) stays here.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <torch/csrc/jit/serialization/import.h>

#include "internal.h"

static const char *member_str(const json_t *o, const char *key) {
  const json_t *v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : nullptr;
}

static TRITONSERVER_Error *read_ios(pt_model_t *m, const char *kind,
                                    std::vector<pt_io_t> *ios) {
  const json_t *a = json_object_get(m->config, kind);
  size_t i;
  json_t *io;
  json_array_foreach(a, i, io) {
    pt_io_t x;
    const char *name = member_str(io, "name");
    const char *dt = member_str(io, "data_type");
    const json_t *dims = json_object_get(io, "dims");
    size_t d;
    json_t *v;
    x.name = name != nullptr ? name : "";
    x.ragged = json_is_true(json_object_get(io, "allow_ragged_batch"));
    json_array_foreach(dims, d, v) x.dims.push_back(json_integer_value(v));
    if (dt != nullptr && strcmp(dt, "TYPE_STRING") == 0) {
      /* A List[str] in TorchScript: one dimension in all, batch included
       * (Triton's rule; its reshape counts when there is one). */
      const json_t *rs =
          json_object_get(json_object_get(io, "reshape"), "shape");
      size_t nd =
          json_array_size(rs != nullptr ? rs : json_object_get(io, "dims"));
      if (nd + (m->max_batch_size > 0 ? 1 : 0) > 1)
        return ifd_be_errf(PT_ERR_INTERNAL,
                           "Triton only supports 1 dimensional List of String "
                           "as %s for '%s' for model '%s'",
                           kind, x.name.c_str(), m->name.c_str());
      x.dtype = TRITONSERVER_TYPE_BYTES;
      ios->push_back(x);
      continue;
    }
    if (!ifd_pt_config_type(dt, &x.dtype, &x.stype))
      return ifd_be_errf(
          PT_ERR_INTERNAL, "unsupported datatype %s for %s '%s' for model '%s'",
          dt != nullptr ? dt : "(none)", kind, x.name.c_str(), m->name.c_str());
    ios->push_back(x);
  }
  if (ios->empty())
    return ifd_be_errf(PT_ERR_INTERNAL,
                       "model configuration must contain at least one %s, "
                       "none were specified.",
                       kind);
  return nullptr;
}

/* The sequence batcher's control inputs (START, END, READY, CORRID), which
 * reach forward() as more arguments: Triton binds them by their
 * <name>__<index> names only. */
static TRITONSERVER_Error *read_controls(pt_model_t *m) {
  const json_t *ctl = json_object_get(
      json_object_get(m->config, "sequence_batching"), "control_input");
  size_t i;
  json_t *ci;
  json_array_foreach(ctl, i, ci) {
    pt_io_t x;
    const char *name = member_str(ci, "name");
    const json_t *c = json_array_get(json_object_get(ci, "control"), 0);
    const char *dt = "TYPE_INT32";
    x.name = name != nullptr ? name : "";
    x.kind = PT_IO_CONTROL;
    if (json_array_size(json_object_get(c, "fp32_false_true")) > 0)
      dt = "TYPE_FP32";
    else if (json_array_size(json_object_get(c, "bool_false_true")) > 0)
      dt = "TYPE_BOOL";
    else if (member_str(c, "data_type") != nullptr &&
             strcmp(member_str(c, "data_type"), "TYPE_INVALID") != 0)
      dt = member_str(c, "data_type"); /* CONTROL_SEQUENCE_CORRID */
    if (ifd_pt_named_index(x.name.c_str()) < 0)
      return ifd_be_errf(PT_ERR_INTERNAL,
                         "input '%s' does not follow <name>__<index> naming "
                         "convention.",
                         x.name.c_str());
    if (!ifd_pt_config_type(dt, &x.dtype, &x.stype))
      return ifd_be_errf(PT_ERR_INTERNAL,
                         "input '%s' type '%s' is not supported by PyTorch.",
                         x.name.c_str(), dt);
    m->inputs.push_back(x);
  }
  return nullptr;
}

/* sequence_batching.state: each state's input_name is one more input of
 * forward(), its output_name one more result (or a configuration output
 * that is also kept as the state). Tensor states only. */
static TRITONSERVER_Error *read_states(pt_model_t *m) {
  const json_t *states = json_object_get(
      json_object_get(m->config, "sequence_batching"), "state");
  size_t i;
  json_t *st;
  json_array_foreach(states, i, st) {
    const char *in = member_str(st, "input_name");
    const char *dt = member_str(st, "data_type");
    pt_io_t x;
    x.kind = PT_IO_STATE;
    x.name = in != nullptr ? in : "";
    if (dt != nullptr && strcmp(dt, "TYPE_STRING") == 0)
      return ifd_be_errf(PT_ERR_ARG,
                         "state '%s' of model '%s' is TYPE_STRING: inferd's "
                         "pytorch backend keeps tensor states only",
                         x.name.c_str(), m->name.c_str());
    if (!ifd_pt_config_type(dt, &x.dtype, &x.stype))
      return ifd_be_errf(PT_ERR_INTERNAL,
                         "unsupported datatype %s for input state '%s' for "
                         "model '%s'",
                         dt != nullptr ? dt : "(none)", x.name.c_str(),
                         m->name.c_str());
    m->inputs.push_back(x);
    m->n_states++;
  }
  return nullptr;
}

/* The states' outputs, after the configuration's outputs are read. */
static void read_state_outputs(pt_model_t *m) {
  const json_t *states = json_object_get(
      json_object_get(m->config, "sequence_batching"), "state");
  size_t i;
  json_t *st;
  json_array_foreach(states, i, st) {
    const char *out = member_str(st, "output_name");
    pt_io_t x;
    x.name = out != nullptr ? out : "";
    ifd_pt_config_type(member_str(st, "data_type"), &x.dtype, &x.stype);
    auto same = std::find_if(m->outputs.begin(), m->outputs.end(),
                             [&](const pt_io_t &o) { return o.name == x.name; });
    if (same != m->outputs.end()) {
      same->is_state = true;
      continue;
    }
    x.is_output = false;
    x.is_state = true;
    m->outputs.push_back(x);
  }
}

/* batch_input: each target is one more input of forward(), made by the
 * backend from the batch (backends/common/batch_io.h). */
static TRITONSERVER_Error *read_batch_inputs(pt_model_t *m) {
  TRITONSERVER_Error *e = ifd_batch_inputs_read(
      m->config, m->name.c_str(), &m->batch_inputs, &m->n_batch_inputs);
  for (size_t i = 0; e == nullptr && i < m->n_batch_inputs; i++)
    for (size_t t = 0; t < m->batch_inputs[i].n_targets; t++) {
      pt_io_t x;
      x.kind = PT_IO_BATCH_INPUT;
      x.name = m->batch_inputs[i].targets[t];
      x.dtype = m->batch_inputs[i].dtype;
      x.stype = x.dtype == TRITONSERVER_TYPE_FP32 ? c10::ScalarType::Float
                                                  : c10::ScalarType::Int;
      x.batch_input = (int)i;
      m->inputs.push_back(x);
    }
  return e;
}

/* batch_output: BATCH_SCATTER_WITH_INPUT_SHAPE, the only kind Triton has. */
static TRITONSERVER_Error *read_batch_outputs(pt_model_t *m) {
  const json_t *bos = json_object_get(m->config, "batch_output");
  size_t i;
  json_t *bo;
  json_array_foreach(bos, i, bo) {
    const char *kind = member_str(bo, "kind");
    const json_t *targets = json_object_get(bo, "target_name");
    const json_t *source = json_array_get(json_object_get(bo, "source_input"), 0);
    if (kind == nullptr || strcmp(kind, "BATCH_SCATTER_WITH_INPUT_SHAPE") != 0)
      return ifd_be_errf(PT_ERR_ARG, "unexpected batch output kind '%s'",
                         kind != nullptr ? kind : "");
    if (!json_is_string(source) || json_array_size(targets) == 0)
      return ifd_be_errf(PT_ERR_ARG,
                         "batch output %zu of model '%s' must name one of "
                         "its outputs and a source_input",
                         i, m->name.c_str());
    size_t t;
    json_t *target;
    json_array_foreach(targets, t, target) {
      auto o = std::find_if(m->outputs.begin(), m->outputs.end(),
                            [&](const pt_io_t &x) {
                              return json_is_string(target) &&
                                     x.is_output &&
                                     x.name == json_string_value(target);
                            });
      if (o == m->outputs.end())
        return ifd_be_errf(PT_ERR_ARG,
                           "batch output %zu of model '%s' must name one of "
                           "its outputs and a source_input",
                           i, m->name.c_str());
      if (o->dtype == TRITONSERVER_TYPE_BYTES)
        return ifd_be_errf(PT_ERR_ARG,
                           "batch output '%s' of model '%s' is TYPE_STRING, "
                           "which a batch output cannot be",
                           o->name.c_str(), m->name.c_str());
      o->scatter_source = json_string_value(source);
    }
  }
  return nullptr;
}

static TRITONSERVER_Error *read_params(pt_model_t *m) {
  const json_t *c = m->config;
  bool disable = false;
  bool set = false;
  TRITONSERVER_Error *e =
      ifd_pt_param_bool(c, "DISABLE_OPTIMIZED_EXECUTION", nullptr, &disable);
  if (e == nullptr) m->optimized_execution = !disable;
  if (e == nullptr)
    e = ifd_pt_param_bool(c, "INFERENCE_MODE", nullptr, &m->inference_mode);
  if (e == nullptr)
    e = ifd_pt_param_bool(c, "ENABLE_CACHE_CLEANING", nullptr,
                          &m->cache_cleaning);
  if (e == nullptr)
    e = ifd_pt_param_bool(c, "ENABLE_WEIGHT_SHARING", nullptr,
                          &m->weight_sharing);
  if (e == nullptr)
    e = ifd_pt_param_bool(c, "ENABLE_JIT_PROFILING", &m->jit_profiling.first,
                          &m->jit_profiling.second);
  if (e == nullptr)
    e = ifd_pt_param_bool(c, "ENABLE_JIT_EXECUTOR", &m->jit_executor.first,
                          &m->jit_executor.second);
  if (e == nullptr)
    e = ifd_pt_param_bool(c, "ENABLE_TENSOR_FUSER", &m->tensor_fuser.first,
                          &m->tensor_fuser.second);
  if (e == nullptr) {
    /* Accepted for Triton's configurations; it selects a CUDA fuser. */
    bool nvfuser = false;
    e = ifd_pt_param_bool(c, "ENABLE_NVFUSER", nullptr, &nvfuser);
  }
  if (e == nullptr)
    e = ifd_pt_param_int(c, "INTRA_OP_THREAD_COUNT", &set,
                         &m->intra_op_threads);
  if (e == nullptr)
    e = ifd_pt_param_int(c, "INTER_OP_THREAD_COUNT", &set,
                         &m->inter_op_threads);
  if (e != nullptr) return e;
  ifd_pt_log(TRITONSERVER_LOG_INFO,
             "Optimized execution is %s for model instance '%s'",
             m->optimized_execution ? "enabled" : "disabled", m->name.c_str());
  ifd_pt_log(TRITONSERVER_LOG_INFO, "Inference Mode is %s for model '%s'",
             m->inference_mode ? "enabled" : "disabled", m->name.c_str());
  return nullptr;
}

/* <repository>/<version>/<default_model_filename or model.pt>. */
static TRITONSERVER_Error *model_path(pt_model_t *m) {
  TRITONBACKEND_ArtifactType type;
  const char *repo = nullptr;
  const char *file = member_str(m->config, "default_model_filename");
  uint64_t version = 0;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelRepository(m->tm, &type, &repo);
  if (e == nullptr) e = TRITONBACKEND_ModelVersion(m->tm, &version);
  if (e != nullptr) return e;
  if (type != TRITONBACKEND_ARTIFACT_FILESYSTEM)
    return ifd_be_errf(TRITONSERVER_ERROR_UNSUPPORTED,
                       "unsupported artifact type for model '%s'",
                       m->name.c_str());
  if (file == nullptr || file[0] == '\0') file = "model.pt";
  m->path = std::string(repo) + "/" + std::to_string(version) + "/" + file;
  if (access(m->path.c_str(), F_OK) != 0)
    return ifd_be_errf(TRITONSERVER_ERROR_UNAVAILABLE,
                       "unable to find '%s' for model instance '%s'",
                       m->path.c_str(), m->name.c_str());
  return nullptr;
}

static TRITONSERVER_Error *read_config(pt_model_t *m) {
  TRITONSERVER_Message *msg = nullptr;
  const char *buf = nullptr;
  size_t len = 0;
  json_error_t jerr;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelConfig(m->tm, 1, &msg);
  if (e == nullptr) e = TRITONSERVER_MessageSerializeToJson(msg, &buf, &len);
  if (e == nullptr) {
    m->config = json_loadb(buf, len, 0, &jerr);
    if (m->config == nullptr)
      e = ifd_be_errf(PT_ERR_INTERNAL, "model configuration of '%s': %s",
                      m->name.c_str(), jerr.text);
  }
  if (msg != nullptr) TRITONSERVER_ErrorDelete(TRITONSERVER_MessageDelete(msg));
  if (e == nullptr) {
    json_t *mbs = json_object_get(m->config, "max_batch_size");
    m->max_batch_size = json_is_integer(mbs) ? (int)json_integer_value(mbs) : 0;
  }
  return e;
}

TRITONSERVER_Error *ifd_pt_model_new(TRITONBACKEND_Model *tm,
                                     pt_model_t **out) {
  const char *name = nullptr;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelName(tm, &name);
  if (e != nullptr) return e;
  pt_model_t *m = new (std::nothrow) pt_model_t();
  if (m == nullptr) return ifd_be_errf(PT_ERR_INTERNAL, "out of memory");
  m->tm = tm;
  m->name = name;
  try {
    e = read_config(m);
    if (e == nullptr) e = read_ios(m, "input", &m->inputs);
    if (e == nullptr) e = read_controls(m);
    if (e == nullptr) e = read_states(m);
    if (e == nullptr) e = read_batch_inputs(m);
    if (e == nullptr) e = read_ios(m, "output", &m->outputs);
    if (e == nullptr) read_state_outputs(m);
    if (e == nullptr) e = read_batch_outputs(m);
    if (e == nullptr) e = read_params(m);
    if (e == nullptr) e = model_path(m);
  } catch (const std::exception &ex) {
    e = ifd_be_errf(PT_ERR_INTERNAL, "%s", ifd_pt_what(ex).c_str());
  }
  if (e != nullptr) {
    ifd_pt_model_free(m);
    return e;
  }
  *out = m;
  return nullptr;
}

void ifd_pt_model_free(pt_model_t *m) {
  if (m == nullptr) return;
  ifd_batch_inputs_free(m->batch_inputs, m->n_batch_inputs);
  json_decref(m->config);
  delete m;
}

/* ---- binding ---- */

static TRITONSERVER_Error *bind_inputs(pt_instance_t *in) {
  pt_model_t *m = in->model;
  const auto &args =
      in->module->get_method("forward").function().getSchema().arguments();
  size_t start = 0;
  std::vector<std::string> names;
  if (!args.empty() && args[0].type()->kind() == c10::TypeKind::ClassType)
    start = 1;
  if (args.size() == start + 1 &&
      args[start].type()->kind() == c10::TypeKind::DictType) {
    for (const auto &io : m->inputs)
      if (io.dtype == TRITONSERVER_TYPE_BYTES)
        return ifd_be_errf(PT_ERR_ARG,
                           "input '%s' of model '%s' is BYTES, which a "
                           "forward() taking Dict[str, Tensor] cannot take",
                           io.name.c_str(), m->name.c_str());
    in->dict_input = true;
    in->n_args = 1;
    in->in_index.assign(m->inputs.size(), 0);
    return nullptr;
  }
  for (size_t i = start + 1; i < args.size(); i++)
    if (args[i].type()->kind() == c10::TypeKind::DictType)
      return ifd_be_errf(PT_ERR_INTERNAL,
                         "Multiple inputs of kind DictType were detected. "
                         "Only a single input of type Dict(str, Tensor) is "
                         "supported.");
  for (size_t i = start; i < args.size(); i++) {
    if (args[i].type()->kind() != c10::TypeKind::TensorType &&
        args[i].type()->kind() != c10::TypeKind::ListType)
      return ifd_be_errf(PT_ERR_INTERNAL,
                         "An input of type '%s' was detected in the model. "
                         "Only a single input of type Dict(str, Tensor) or "
                         "input(s) of type Tensor are supported.",
                         args[i].type()->str().c_str());
    names.push_back(args[i].name());
  }
  in->n_args = names.size();
  std::vector<pt_name_t> ins;
  std::vector<const char *> args_c;
  for (const auto &io : m->inputs) ins.push_back({io.name.c_str(), io.kind});
  for (const auto &n : names) args_c.push_back(n.c_str());
  in->in_index.resize(ins.size());
  return ifd_pt_bind_input_names(
      m->name.c_str(), ins.data(), ins.size(), args_c.data(), args_c.size(),
      json_array_size(json_object_get(m->config, "batch_input")),
      in->in_index.data());
}

/* Outputs by name when forward() is declared to return a Dict, else by
 * <name>__<index> or in the configuration's order (pt_names.h). */
static TRITONSERVER_Error *bind_outputs(pt_instance_t *in) {
  pt_model_t *m = in->model;
  const auto &rets =
      in->module->get_method("forward").function().getSchema().returns();
  bool returns_dict =
      !rets.empty() && rets[0].type()->kind() == c10::TypeKind::DictType;
  bool has_states = false;
  std::vector<pt_name_t> outs;
  for (const auto &io : m->inputs)
    has_states = has_states || io.kind == PT_IO_STATE;
  for (const auto &io : m->outputs) {
    outs.push_back(
        {io.name.c_str(), io.is_output ? PT_IO_OUTPUT : PT_IO_STATE});
    has_states = has_states || io.is_state;
  }
  in->out_index.resize(outs.size());
  return ifd_pt_bind_output_names(m->name.c_str(), outs.data(), outs.size(),
                                  returns_dict, has_states,
                                  in->out_index.data());
}

/* Loads the module from m->path; the text of libtorch's error on failure. */
static TRITONSERVER_Error *load(pt_model_t *m,
                                std::shared_ptr<torch::jit::Module> *out) {
  try {
    c10::InferenceMode guard(m->inference_mode);
    *out = std::make_shared<torch::jit::Module>(
        torch::jit::load(m->path, torch::Device(torch::kCPU)));
    out->get()->eval();
  } catch (const std::exception &ex) {
    return ifd_be_errf(PT_ERR_INTERNAL, "failed to load model '%s': %s",
                       m->name.c_str(), ifd_pt_what(ex).c_str());
  }
  return nullptr;
}

/* The process-wide thread pools: intra-op may change at any time (per
 * thread that runs an op later), inter-op only before libtorch first uses
 * it, after which the first value stays (logged). */
static void set_threads(pt_model_t *m) {
  if (m->intra_op_threads > 0) {
    at::set_num_threads(m->intra_op_threads);
    ifd_pt_log(TRITONSERVER_LOG_INFO, "Intra op thread count is set to %d",
               m->intra_op_threads);
  }
  if (m->inter_op_threads > 0 &&
      at::get_num_interop_threads() != m->inter_op_threads) {
    try {
      at::set_num_interop_threads(m->inter_op_threads);
      ifd_pt_log(TRITONSERVER_LOG_INFO, "Inter op thread count is set to %d",
                 m->inter_op_threads);
    } catch (const std::exception &ex) {
      ifd_pt_log(TRITONSERVER_LOG_WARN,
                 "INTER_OP_THREAD_COUNT %d of model '%s' not applied (the "
                 "process's inter-op pool is already running with %d "
                 "threads): %s",
                 m->inter_op_threads, m->name.c_str(),
                 at::get_num_interop_threads(), ifd_pt_what(ex).c_str());
    }
  }
}

TRITONSERVER_Error *ifd_pt_instance_new(pt_model_t *m,
                                        TRITONBACKEND_ModelInstance *ti,
                                        pt_instance_t **out) {
  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
  const char *name = nullptr;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceKind(ti, &kind);
  if (e == nullptr) e = TRITONBACKEND_ModelInstanceName(ti, &name);
  if (e != nullptr) return e;
  if (kind != TRITONSERVER_INSTANCEGROUPKIND_CPU)
    return ifd_be_errf(TRITONSERVER_ERROR_UNSUPPORTED,
                       "instance '%s' of model '%s' is %s: inferd's pytorch "
                       "backend runs on Debian's CPU-only libtorch %s, so only "
                       "KIND_CPU instances are served",
                       name, m->name.c_str(),
                       TRITONSERVER_InstanceGroupKindString(kind),
                       TORCH_VERSION);
  pt_instance_t *in = new (std::nothrow) pt_instance_t();
  if (in == nullptr) return ifd_be_errf(PT_ERR_INTERNAL, "out of memory");
  in->model = m;
  in->ti = ti;
  in->name = name;
  try {
    set_threads(m);
    if (m->weight_sharing) {
      std::lock_guard<std::mutex> lock(m->mu);
      if (m->shared == nullptr) e = load(m, &m->shared);
      if (e == nullptr) {
        in->module = m->shared;
        ifd_pt_log(TRITONSERVER_LOG_INFO,
                   "Weight sharing is enabled for model instance '%s'", name);
      }
    } else {
      e = load(m, &in->module);
    }
    if (e == nullptr) e = bind_inputs(in);
    if (e == nullptr) e = bind_outputs(in);
  } catch (const std::exception &ex) {
    if (e == nullptr)
      e = ifd_be_errf(PT_ERR_INTERNAL, "failed to load model '%s': %s",
                      m->name.c_str(), ifd_pt_what(ex).c_str());
  }
  if (e != nullptr) {
    ifd_pt_instance_free(in);
    return e;
  }
  *out = in;
  return nullptr;
}

void ifd_pt_instance_free(pt_instance_t *in) {
  delete in;
}

/*
 * backend_api/backends/pytorch/pt_exec.cc - one TRITONBACKEND_ModelInstance
 * Execute of the PyTorch backend.
 *
 * A model that batches (max_batch_size > 0) runs the requests of the call
 * as one batch: each input is the requests' tensors concatenated along
 * dim 0, each output is split back along dim 0 into each request's own
 * rows. A model that does not batch runs each request by itself. The whole
 * execute (inputs made, forward(), outputs read) runs under one
 * InferenceMode (INFERENCE_MODE, Triton's default) or else NoGradGuard, and
 * the model's JIT switches are written only when the process's differ; a
 * small input is copied into the tensor the previous run used when nothing
 * holds that one any more (input_tensor()). An exception forward() raises
 * fails that run's requests with
 * "PyTorch execute failure: " and the TorchScript error text, as Triton's
 * backend answers, and the instance keeps serving.
 */
#include <string.h>
#include <time.h>

#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>

#include "internal.h"

namespace {

uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One run: requests reqs[0..n) (borrowed), their responses (NULL once
 * answered) and batch sizes. */
struct run_t {
  pt_instance_t *in;
  TRITONBACKEND_Request **reqs;
  TRITONBACKEND_Response **resp;
  std::vector<int64_t> batch;
  int64_t total = 0;
};

void answer_all(run_t *x, size_t n, TRITONSERVER_Error *e) {
  for (size_t r = 0; r < n; r++)
    if (x->resp[r] != nullptr) {
      ifd_pt_log_err(TRITONBACKEND_ResponseSend(
                         x->resp[r], TRITONSERVER_RESPONSE_COMPLETE_FINAL, e),
                     "failed to send pytorch backend response");
      x->resp[r] = nullptr;
    }
  TRITONSERVER_ErrorDelete(e);
}

const char *type_name(TRITONSERVER_DataType dt) {
  return TRITONSERVER_DataTypeString(dt);
}

/* Inputs up to this size are gathered into the tensor the previous run
 * used (input_tensor()): for them allocating a tensor costs more than the
 * copy (issue 27), and an instance keeps at most this much a input. */
#define PT_REUSE_MAX (64 * 1024)

/* A tensor of `shape` and io's type for gather() to fill: the one the last
 * run of input `io` filled, if it has that shape and no one else holds it
 * or its storage (forward() may keep an input, or a view of it, in the
 * module or in an output, and that one is left alone); else a new one,
 * kept for the next run when it is small. */
torch::Tensor input_tensor(pt_instance_t *in, const pt_io_t &io,
                           const std::vector<int64_t> &shape) {
  std::pair<const pt_io_t *, torch::Tensor> *slot = nullptr;
  for (auto &p : in->reuse)
    if (p.first == &io) slot = &p;
  if (slot != nullptr) {
    const torch::Tensor &t = slot->second;
    if (t.use_count() == 1 && t.weak_use_count() == 1 &&
        t.storage().use_count() == 1 && t.sizes().equals(shape) &&
        t.is_contiguous() && t.storage_offset() == 0 && !t.requires_grad() &&
        t.storage().nbytes() == t.nbytes())
      return t;
    slot->second.reset();
  }
  torch::Tensor t = torch::empty(shape, torch::TensorOptions().dtype(io.stype));
  if (t.nbytes() > PT_REUSE_MAX) return t;
  if (slot == nullptr) {
    in->reuse.emplace_back(&io, t);
  } else {
    slot->second = t;
  }
  return t;
}

/* Input `io` of every request, concatenated along dim 0 (batching) or the
 * one request's tensor, as a tensor that owns its bytes. */
TRITONSERVER_Error *gather(run_t *x, size_t n, const pt_io_t &io,
                           torch::Tensor *out) {
  pt_model_t *m = x->in->model;
  std::vector<int64_t> shape;
  std::vector<TRITONBACKEND_Input *> inputs(n);
  std::vector<uint32_t> nbufs(n);
  std::vector<uint64_t> sizes(n);
  for (size_t r = 0; r < n; r++) {
    TRITONSERVER_DataType dt;
    const int64_t *s = nullptr;
    uint32_t nd = 0;
    TRITONSERVER_Error *e =
        TRITONBACKEND_RequestInput(x->reqs[r], io.name.c_str(), &inputs[r]);
    if (e == nullptr)
      e = TRITONBACKEND_InputProperties(inputs[r], nullptr, &dt, &s, &nd,
                                        &sizes[r], &nbufs[r]);
    if (e != nullptr) return e;
    if (dt != io.dtype)
      return ifd_be_errf(PT_ERR_ARG,
                         "input '%s' of model '%s' is %s, the configuration "
                         "says %s",
                         io.name.c_str(), m->name.c_str(), type_name(dt),
                         type_name(io.dtype));
    std::vector<int64_t> rs(s, s + nd);
    if (io.ragged) {
      /* A ragged input is the batch's elements in one flat tensor. */
      int64_t count = ifd_batch_elements(s, nd);
      if (r == 0) shape.assign(1, 0);
      shape[0] += count;
      continue;
    }
    if (r == 0) {
      shape = rs;
      continue;
    }
    /* The batcher joins requests whose shapes agree past the batch dim. */
    if (rs.size() != shape.size() || rs.empty() ||
        !std::equal(rs.begin() + 1, rs.end(), shape.begin() + 1))
      return ifd_be_errf(PT_ERR_ARG,
                         "input '%s' of model '%s': the requests batched "
                         "together have different shapes",
                         io.name.c_str(), m->name.c_str());
  }
  if (m->max_batch_size > 0 && !io.ragged) {
    if (shape.empty())
      return ifd_be_errf(PT_ERR_ARG,
                         "input '%s' of model '%s' has no batch "
                         "dimension",
                         io.name.c_str(), m->name.c_str());
    shape[0] = x->total;
  }
  torch::Tensor t = input_tensor(x->in, io, shape);
  const uint64_t want = (uint64_t)t.nbytes();
  char *dst = static_cast<char *>(t.data_ptr());
  uint64_t off = 0;
  for (size_t r = 0; r < n; r++)
    for (uint32_t b = 0; b < nbufs[r]; b++) {
      const void *src = nullptr;
      uint64_t len = 0;
      TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
      int64_t mt_id = 0;
      TRITONSERVER_Error *e =
          TRITONBACKEND_InputBuffer(inputs[r], b, &src, &len, &mt, &mt_id);
      if (e != nullptr) return e;
      if (mt == TRITONSERVER_MEMORY_GPU && len > 0)
        return ifd_be_errf(PT_ERR_ARG,
                           "pytorch backend: inputs in GPU memory "
                           "are not supported on a CPU instance");
      if (len > want - off)
        return ifd_be_errf(PT_ERR_ARG,
                           "input '%s' of model '%s' holds more bytes than "
                           "its shape says",
                           io.name.c_str(), m->name.c_str());
      if (len > 0) memcpy(dst + off, src, len);
      off += len;
    }
  if (off != want)
    return ifd_be_errf(PT_ERR_ARG,
                       "input '%s' of model '%s' holds %llu bytes, its shape "
                       "says %llu",
                       io.name.c_str(), m->name.c_str(),
                       (unsigned long long)off, (unsigned long long)want);
  *out = t;
  return nullptr;
}

/* The shape of request r's input `name`. */
TRITONSERVER_Error *source_shape(run_t *x, size_t r, const std::string &name,
                                 ifd_shape_ref_t *out) {
  TRITONBACKEND_Input *input = nullptr;
  TRITONSERVER_Error *e =
      TRITONBACKEND_RequestInput(x->reqs[r], name.c_str(), &input);
  if (e == nullptr)
    e = TRITONBACKEND_InputProperties(input, nullptr, nullptr, &out->dims,
                                      &out->nd, nullptr, nullptr);
  return e;
}

/* A batch input's target `io`: Triton's values for the requests of the run
 * (backends/common/batch_io.h). */
TRITONSERVER_Error *make_batch_input(run_t *x, size_t n, const pt_io_t &io,
                                     torch::Tensor *out) {
  const ifd_batch_input_t &bi = x->in->model->batch_inputs[io.batch_input];
  std::vector<ifd_shape_ref_t> src(n);
  int64_t shape[2];
  for (size_t r = 0; r < n; r++) {
    TRITONSERVER_Error *e = source_shape(x, r, bi.source, &src[r]);
    if (e != nullptr) return e;
  }
  size_t nd = ifd_batch_input_shape(bi.kind, src.data(), n, shape);
  torch::Tensor t = torch::empty(std::vector<int64_t>(shape, shape + nd),
                                 torch::TensorOptions().dtype(io.stype));
  ifd_batch_input_fill(bi.kind, bi.dtype, src.data(), n, t.data_ptr(),
                       ifd_batch_elements(shape, nd));
  *out = t;
  return nullptr;
}

bool wanted(TRITONBACKEND_Request *req, const std::string &name);

/* A BYTES input (one request: BYTES is never batched, see read_ios) as a
 * List[str]: each element a 4-byte little-endian length and its bytes. */
TRITONSERVER_Error *gather_strings(run_t *x, const pt_io_t &io,
                                   c10::List<std::string> *out) {
  pt_model_t *m = x->in->model;
  TRITONBACKEND_Input *input = nullptr;
  const int64_t *s = nullptr;
  uint32_t nd = 0, nbuf = 0;
  uint64_t size = 0;
  std::string raw;
  TRITONSERVER_Error *e =
      TRITONBACKEND_RequestInput(x->reqs[0], io.name.c_str(), &input);
  if (e == nullptr)
    e = TRITONBACKEND_InputProperties(input, nullptr, nullptr, &s, &nd, &size,
                                      &nbuf);
  for (uint32_t b = 0; e == nullptr && b < nbuf; b++) {
    const void *src = nullptr;
    uint64_t len = 0;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mt_id = 0;
    e = TRITONBACKEND_InputBuffer(input, b, &src, &len, &mt, &mt_id);
    if (e == nullptr && mt == TRITONSERVER_MEMORY_GPU && len > 0)
      e = ifd_be_errf(PT_ERR_ARG,
                      "pytorch backend: inputs in GPU memory are "
                      "not supported on a CPU instance");
    if (e == nullptr) raw.append(static_cast<const char *>(src), len);
  }
  if (e != nullptr) return e;
  int64_t count = 1;
  for (uint32_t i = 0; i < nd; i++) count *= s[i];
  size_t at = 0;
  for (int64_t i = 0; i < count; i++) {
    uint32_t len;
    if (raw.size() - at < sizeof(len))
      return ifd_be_errf(PT_ERR_ARG,
                         "expected %lld strings for inference input '%s', got "
                         "%lld",
                         (long long)count, io.name.c_str(), (long long)i);
    memcpy(&len, raw.data() + at, sizeof(len));
    at += sizeof(len);
    if (raw.size() - at < len)
      return ifd_be_errf(PT_ERR_ARG,
                         "incomplete string data for inference input '%s', "
                         "expecting string of length %u but only %zu bytes "
                         "available",
                         io.name.c_str(), len, raw.size() - at);
    out->push_back(raw.substr(at, len));
    at += len;
  }
  if (at != raw.size())
    return ifd_be_errf(PT_ERR_ARG,
                       "input '%s' of model '%s' holds more than its %lld "
                       "strings",
                       io.name.c_str(), m->name.c_str(), (long long)count);
  return nullptr;
}

/* A List[str] result as BYTES output `io` of the one request. */
TRITONSERVER_Error *scatter_strings(run_t *x, const pt_io_t &io,
                                    const c10::IValue &v) {
  if (!v.isList() ||
      v.toList().elementType()->kind() != c10::TypeKind::StringType)
    return ifd_be_errf(PT_ERR_ARG,
                       "output '%s' must be of type Tensor or List[str].",
                       io.name.c_str());
  c10::List<c10::IValue> list = v.toList();
  std::string ser;
  for (size_t i = 0; i < list.size(); i++) {
    const std::string &str = list.get(i).toStringRef();
    uint32_t len = (uint32_t)str.size();
    ser.append(reinterpret_cast<const char *>(&len), sizeof(len));
    ser.append(str);
  }
  if (x->resp[0] == nullptr || !wanted(x->reqs[0], io.name)) return nullptr;
  int64_t shape[1] = {(int64_t)list.size()};
  TRITONBACKEND_Output *o = nullptr;
  void *buf = nullptr;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  TRITONSERVER_Error *e = TRITONBACKEND_ResponseOutput(
      x->resp[0], &o, io.name.c_str(), TRITONSERVER_TYPE_BYTES, shape, 1);
  if (e == nullptr)
    e = TRITONBACKEND_OutputBuffer(o, &buf, ser.size(), &mt, &mt_id);
  if (e == nullptr && mt == TRITONSERVER_MEMORY_GPU && !ser.empty())
    e = ifd_be_errf(PT_ERR_INTERNAL,
                    "pytorch backend: output buffers in GPU memory are not "
                    "supported on a CPU instance");
  if (e == nullptr && !ser.empty()) memcpy(buf, ser.data(), ser.size());
  return e;
}

/* The model's JIT switches, process-wide (the optimize one per thread),
 * each written only when it differs: the same state as setting them before
 * every forward(), without the writes. */
void set_jit_switches(const pt_model_t *m) {
  if (torch::jit::getGraphExecutorOptimize() != m->optimized_execution)
    torch::jit::setGraphExecutorOptimize(m->optimized_execution);
  if (m->jit_profiling.first &&
      torch::jit::getProfilingMode() != m->jit_profiling.second)
    torch::jit::getProfilingMode() = m->jit_profiling.second;
  if (m->jit_executor.first &&
      torch::jit::getExecutorMode() != m->jit_executor.second)
    torch::jit::getExecutorMode() = m->jit_executor.second;
  if (m->tensor_fuser.first &&
      torch::jit::tensorExprFuserEnabled() != m->tensor_fuser.second)
    torch::jit::setTensorExprFuserEnabled(m->tensor_fuser.second);
}

/* forward() on the gathered inputs, its result as IValues by position
 * (a tensor, or a tuple's or list's elements) or by key (a dict). The
 * caller holds the execute's InferenceMode or NoGradGuard. */
TRITONSERVER_Error *forward(run_t *x, std::vector<c10::IValue> *args,
                            std::vector<c10::IValue> *outs,
                            c10::Dict<c10::IValue, c10::IValue> *dict,
                            bool *is_dict) {
  pt_model_t *m = x->in->model;
  try {
    set_jit_switches(m);
    c10::IValue res = x->in->module->forward(*args);
    if (res.isTensor()) {
      outs->push_back(res);
    } else if (res.isTuple()) {
      for (const auto &v : res.toTupleRef().elements()) outs->push_back(v);
    } else if (res.isList() && res.toList().elementType()->kind() ==
                                   c10::TypeKind::StringType) {
      outs->push_back(res); /* one BYTES output */
    } else if (res.isList()) {
      for (const auto &v : res.toListRef()) outs->push_back(v);
    } else if (res.isGenericDict()) {
      *dict = res.toGenericDict();
      *is_dict = true;
    } else {
      return ifd_be_errf(PT_ERR_ARG,
                         "output must be of type Tensor, or a Tuple, List or "
                         "Dict of Tensors; model '%s' returned %s",
                         m->name.c_str(), res.tagKind().c_str());
    }
  } catch (const std::exception &ex) {
    return ifd_be_errf(PT_ERR_INTERNAL, "PyTorch execute failure: %s",
                       ifd_pt_what(ex).c_str());
  }
  return nullptr;
}

/* Whether request r asked for output `name` (all, when it named none). */
bool wanted(TRITONBACKEND_Request *req, const std::string &name) {
  uint32_t count = 0;
  TRITONSERVER_Error *e = TRITONBACKEND_RequestOutputCount(req, &count);
  if (e != nullptr || count == 0) {
    TRITONSERVER_ErrorDelete(e);
    return true;
  }
  for (uint32_t i = 0; i < count; i++) {
    const char *n = nullptr;
    e = TRITONBACKEND_RequestOutputName(req, i, &n);
    if (e != nullptr) {
      TRITONSERVER_ErrorDelete(e);
      continue;
    }
    if (name == n) return true;
  }
  return false;
}

/* Request r's share of output `io` (bytes at src, shape rs) into its
 * response (state false) or as the sequence's next state (state true). */
TRITONSERVER_Error *put_share(run_t *x, size_t r, const pt_io_t &io,
                              bool state, const std::vector<int64_t> &rs,
                              const char *src, size_t bytes) {
  void *buf = nullptr;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  TRITONBACKEND_State *st = nullptr;
  TRITONSERVER_Error *e;
  if (state) {
    e = TRITONBACKEND_StateNew(&st, x->reqs[r], io.name.c_str(), io.dtype,
                               rs.data(), (uint32_t)rs.size());
    if (e == nullptr)
      e = TRITONBACKEND_StateBuffer(st, &buf, bytes, &mt, &mt_id);
  } else {
    TRITONBACKEND_Output *o = nullptr;
    e = TRITONBACKEND_ResponseOutput(x->resp[r], &o, io.name.c_str(),
                                     io.dtype, rs.data(), (uint32_t)rs.size());
    if (e == nullptr) e = TRITONBACKEND_OutputBuffer(o, &buf, bytes, &mt, &mt_id);
  }
  if (e == nullptr && mt == TRITONSERVER_MEMORY_GPU && bytes > 0)
    e = ifd_be_errf(PT_ERR_INTERNAL,
                    "pytorch backend: output buffers in GPU memory are not "
                    "supported on a CPU instance");
  if (e == nullptr && bytes > 0) memcpy(buf, src, bytes);
  if (e == nullptr && st != nullptr) e = TRITONBACKEND_StateUpdate(st);
  return e;
}

/* Output `io` (the model's value v) split into each request's rows, or,
 * for a batch output, into each request's source-input shape. */
TRITONSERVER_Error *scatter(run_t *x, size_t n, const pt_io_t &io,
                            const c10::IValue &v) {
  pt_model_t *m = x->in->model;
  const bool scattered = !io.scatter_source.empty();
  if (!v.isTensor())
    return ifd_be_errf(PT_ERR_ARG,
                       "output '%s' must be of type Tensor, model '%s' gives "
                       "%s",
                       io.name.c_str(), m->name.c_str(), v.tagKind().c_str());
  torch::Tensor t = v.toTensor().contiguous();
  TRITONSERVER_DataType dt = ifd_pt_triton_type(t.scalar_type());
  if (dt != io.dtype)
    return ifd_be_errf(PT_ERR_ARG,
                       "configuration expects datatype TYPE_%s for output "
                       "'%s', model provides TYPE_%s",
                       type_name(io.dtype), io.name.c_str(),
                       dt == TRITONSERVER_TYPE_INVALID
                           ? c10::toString(t.scalar_type())
                           : type_name(dt));
  if (t.dim() == 0)
    return ifd_be_errf(PT_ERR_ARG,
                       "output '%s' is a scalar which is not supported.",
                       io.name.c_str());
  std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
  if (m->max_batch_size > 0 && !scattered && shape[0] != x->total)
    return ifd_be_errf(PT_ERR_ARG,
                       "output '%s' of model '%s' has %lld rows for a batch "
                       "of %lld: a batching model's outputs keep the batch "
                       "dimension first",
                       io.name.c_str(), m->name.c_str(), (long long)shape[0],
                       (long long)x->total);
  const char *src = static_cast<const char *>(t.data_ptr());
  const size_t all = (size_t)t.nbytes();
  const size_t elem = (size_t)t.element_size();
  const size_t row = m->max_batch_size > 0 && shape[0] > 0
                         ? all / (size_t)shape[0]
                         : all;
  size_t off = 0;
  for (size_t r = 0; r < n; r++) {
    std::vector<int64_t> rs = shape;
    size_t bytes = all;
    TRITONSERVER_Error *e = nullptr;
    if (scattered) {
      /* BATCH_SCATTER_WITH_INPUT_SHAPE: the request's source input shape
       * fills the configured dims' -1s. */
      ifd_shape_ref_t s;
      int64_t d[64];
      e = source_shape(x, r, io.scatter_source, &s);
      if (e == nullptr) {
        size_t nd = ifd_batch_scatter_shape(m->max_batch_size > 0,
                                            io.dims.data(), io.dims.size(),
                                            &s, d, 64);
        rs.assign(d, d + nd);
        bytes = (size_t)ifd_batch_elements(d, nd) * elem;
        if (bytes > all - off)
          e = ifd_be_errf(PT_ERR_INTERNAL,
                          "output '%s' is smaller than its requests' source "
                          "input '%s' shapes",
                          io.name.c_str(), io.scatter_source.c_str());
      }
    } else if (m->max_batch_size > 0) {
      rs[0] = x->batch[r];
      bytes = row * (size_t)x->batch[r];
    }
    for (int state = 0; e == nullptr && state < 2; state++) {
      if (x->resp[r] == nullptr) break;
      if (state ? !io.is_state : !(io.is_output && wanted(x->reqs[r], io.name)))
        continue;
      e = put_share(x, r, io, state != 0, rs, src + off, bytes);
    }
    if (e != nullptr && x->resp[r] != nullptr) {
      ifd_pt_log_err(TRITONBACKEND_ResponseSend(
                         x->resp[r], TRITONSERVER_RESPONSE_COMPLETE_FINAL, e),
                     "failed to send pytorch backend response");
      x->resp[r] = nullptr;
    }
    TRITONSERVER_ErrorDelete(e);
    if (scattered || m->max_batch_size > 0) off += bytes;
  }
  return nullptr;
}

/* Runs requests reqs[0..n) as one forward(). */
TRITONSERVER_Error *run(run_t *x, size_t n) {
  pt_instance_t *in = x->in;
  pt_model_t *m = in->model;
  std::vector<c10::IValue> args(in->n_args);
  std::vector<c10::IValue> outs;
  c10::Dict<c10::IValue, c10::IValue> dict(c10::StringType::get(),
                                           c10::TensorType::get());
  bool is_dict = false;
  TRITONSERVER_Error *e = nullptr;
  {
    if (in->dict_input) {
      c10::Dict<std::string, torch::Tensor> d;
      for (const auto &io : m->inputs) {
        torch::Tensor t;
        e = io.kind == PT_IO_BATCH_INPUT ? make_batch_input(x, n, io, &t)
                                         : gather(x, n, io, &t);
        if (e != nullptr) return e;
        d.insert(io.name, t);
      }
      args[0] = d;
    } else {
      for (size_t i = 0; i < m->inputs.size(); i++) {
        const pt_io_t &io = m->inputs[i];
        if (io.dtype == TRITONSERVER_TYPE_BYTES) {
          c10::List<std::string> l;
          e = gather_strings(x, io, &l);
          if (e != nullptr) return e;
          args[in->in_index[i]] = l;
          continue;
        }
        torch::Tensor t;
        e = io.kind == PT_IO_BATCH_INPUT ? make_batch_input(x, n, io, &t)
                                         : gather(x, n, io, &t);
        if (e != nullptr) return e;
        args[in->in_index[i]] = t;
      }
    }
  }
  e = forward(x, &args, &outs, &dict, &is_dict);
  if (e != nullptr) return e;
  for (size_t i = 0; i < m->outputs.size(); i++) {
    const pt_io_t &io = m->outputs[i];
    c10::IValue v;
    if (is_dict) {
      auto it = dict.find(c10::IValue(io.name));
      if (it == dict.end())
        return ifd_be_errf(PT_ERR_ARG,
                           "output '%s' of model '%s' is not a key of the "
                           "dictionary its forward() returned",
                           io.name.c_str(), m->name.c_str());
      v = it->value();
    } else {
      int idx = in->out_index[i];
      if (idx < 0 || (size_t)idx >= outs.size())
        return ifd_be_errf(PT_ERR_ARG,
                           "The output %s in the model configuration refers "
                           "to an output index which doesn't exist. This "
                           "model has %zu outputs",
                           io.name.c_str(), outs.size());
      v = outs[idx];
    }
    e = io.dtype == TRITONSERVER_TYPE_BYTES ? scatter_strings(x, io, v)
                                            : scatter(x, n, io, v);
    if (e != nullptr) return e;
  }
  return nullptr;
}

}  // namespace

void ifd_pt_execute(pt_instance_t *in, TRITONBACKEND_Request **requests,
                    uint32_t n) {
  pt_model_t *m = in->model;
  uint64_t exec_start = now_ns(), compute_start = 0, compute_end = 0;
  std::vector<TRITONBACKEND_Response *> resp(n, nullptr);
  run_t x;
  x.in = in;
  x.reqs = requests;
  x.resp = resp.data();
  x.batch.assign(n, 1);
  bool any_ok = false;

  for (uint32_t r = 0; r < n; r++) {
    if (m->max_batch_size > 0) {
      TRITONBACKEND_Input *input = nullptr;
      const int64_t *shape = nullptr;
      uint32_t nd = 0;
      TRITONSERVER_Error *e =
          TRITONBACKEND_RequestInputByIndex(requests[r], 0, &input);
      if (e == nullptr)
        e = TRITONBACKEND_InputProperties(input, nullptr, nullptr, &shape, &nd,
                                          nullptr, nullptr);
      if (e == nullptr && nd > 0) x.batch[r] = shape[0];
      TRITONSERVER_ErrorDelete(e);
    }
    x.total += x.batch[r];
    ifd_pt_log_err(TRITONBACKEND_ResponseNew(&resp[r], requests[r]),
                   "failed to create response");
  }

  compute_start = now_ns();
  try {
    /* One guard for the whole execute; InferenceMode(false) turns grad
     * mode on, so NoGradGuard comes after it. */
    c10::InferenceMode mode(m->inference_mode);
    torch::NoGradGuard no_grad;
    if (m->max_batch_size > 0) {
      TRITONSERVER_Error *e = run(&x, n);
      if (e != nullptr) answer_all(&x, n, e);
    } else {
      /* Without batching each request is a forward() of its own. */
      for (uint32_t r = 0; r < n; r++) {
        run_t one;
        one.in = in;
        one.reqs = &requests[r];
        one.resp = &resp[r];
        one.batch.assign(1, 1);
        one.total = 1;
        TRITONSERVER_Error *e = run(&one, 1);
        if (e != nullptr) answer_all(&one, 1, e);
      }
    }
  } catch (const std::exception &ex) {
    answer_all(&x, n,
               ifd_be_errf(PT_ERR_INTERNAL, "pytorch backend: %s",
                           ifd_pt_what(ex).c_str()));
  }
  compute_end = now_ns();

  for (uint32_t r = 0; r < n; r++) {
    bool ok = resp[r] != nullptr;
    if (ok) {
      ifd_pt_log_err(
          TRITONBACKEND_ResponseSend(
              resp[r], TRITONSERVER_RESPONSE_COMPLETE_FINAL, nullptr),
          "failed to send pytorch backend response");
      any_ok = true;
    }
    ifd_pt_log_err(TRITONBACKEND_ModelInstanceReportStatistics(
                       in->ti, requests[r], ok, exec_start, compute_start,
                       compute_end, now_ns()),
                   "failed reporting request statistics");
    ifd_pt_log_err(TRITONBACKEND_RequestRelease(
                       requests[r], TRITONSERVER_REQUEST_RELEASE_ALL),
                   "failed releasing request");
  }
  if (any_ok)
    ifd_pt_log_err(TRITONBACKEND_ModelInstanceReportBatchStatistics(
                       in->ti, (uint64_t)x.total, exec_start, compute_start,
                       compute_end, now_ns()),
                   "failed reporting batch request statistics");
}

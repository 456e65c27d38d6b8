/*
 * backend_api/backends/pytorch/pytorch.cc - inferd's PyTorch (TorchScript)
 * backend: the TRITONBACKEND_* entry points.
 *
 * Built as libtriton_pytorch.so against Debian's libtorch (1.13, CPU only),
 * through the public backend ABI only. It serves what Triton's
 * pytorch_libtorch backend serves: platform "pytorch_libtorch" or backend
 * "pytorch", model.pt (a torch.jit.save'd module) as the default file, with
 * Triton's input and output naming rules, parameters and messages
 * (docs/backends.md, "PyTorch backend").
 *
 * C++ stays inside: every entry point is extern "C" and catches whatever
 * libtorch throws, answering a TRITONSERVER_Error with its text.
 *
 * Threads: TRITONBACKEND_Initialize and _ModelInitialize run on a pool
 * thread; each instance loads its module, executes and finalizes on the
 * instance's own thread, and instances may load in parallel.
 */
#include "internal.h"

extern "C" {

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  uint32_t major = 0, minor = 0;
  TRITONSERVER_Error *e = TRITONBACKEND_ApiVersion(&major, &minor);
  (void)backend;
  if (e != nullptr) return e;
  if (major != TRITONBACKEND_API_VERSION_MAJOR ||
      minor < TRITONBACKEND_API_VERSION_MINOR)
    return ifd_be_errf(TRITONSERVER_ERROR_UNSUPPORTED,
                       "Triton TRITONBACKEND API version: %u.%u does not "
                       "support 'pytorch' TRITONBACKEND API version: %u.%u",
                       major, minor, TRITONBACKEND_API_VERSION_MAJOR,
                       TRITONBACKEND_API_VERSION_MINOR);
  ifd_pt_log(TRITONSERVER_LOG_INFO,
             "TRITONBACKEND_Initialize: pytorch (libtorch %s, CPU)",
             TORCH_VERSION);
  return nullptr;
}

TRITONSERVER_Error *TRITONBACKEND_Finalize(TRITONBACKEND_Backend *backend) {
  (void)backend;
  return nullptr;
}

TRITONSERVER_Error *TRITONBACKEND_GetBackendAttribute(
    TRITONBACKEND_Backend *backend, TRITONBACKEND_BackendAttribute *attr) {
  TRITONSERVER_Error *e;
  (void)backend;
  e = TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading(attr, true);
  /* A CPU-only libtorch: a model without an instance_group gets KIND_CPU
   * even on a machine with GPUs. */
  if (e == nullptr)
    e = TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup(
        attr, TRITONSERVER_INSTANCEGROUPKIND_CPU, 0, nullptr, 0);
  return e;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  pt_model_t *m = nullptr;
  TRITONSERVER_Error *e = nullptr;
  try {
    e = ifd_pt_model_new(model, &m);
    if (e == nullptr) {
      e = TRITONBACKEND_ModelSetState(model, m);
      if (e != nullptr) ifd_pt_model_free(m);
    }
  } catch (const std::exception &ex) {
    e = ifd_be_errf(PT_ERR_INTERNAL, "%s", ifd_pt_what(ex).c_str());
  }
  return e;
}

TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
  void *vm = nullptr;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelState(model, &vm);
  if (e == nullptr) {
    try {
      ifd_pt_model_free(static_cast<pt_model_t *>(vm));
    } catch (const std::exception &ex) {
      ifd_pt_log(TRITONSERVER_LOG_ERROR, "pytorch backend: %s",
                 ifd_pt_what(ex).c_str());
    }
  }
  return e;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(
    TRITONBACKEND_ModelInstance *instance) {
  TRITONBACKEND_Model *model = nullptr;
  void *vm = nullptr;
  pt_instance_t *in = nullptr;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceModel(instance, &model);
  if (e == nullptr) e = TRITONBACKEND_ModelState(model, &vm);
  try {
    if (e == nullptr)
      e = ifd_pt_instance_new(static_cast<pt_model_t *>(vm), instance, &in);
    if (e == nullptr) {
      e = TRITONBACKEND_ModelInstanceSetState(instance, in);
      if (e != nullptr) ifd_pt_instance_free(in);
    }
  } catch (const std::exception &ex) {
    e = ifd_be_errf(PT_ERR_INTERNAL, "%s", ifd_pt_what(ex).c_str());
  }
  return e;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(
    TRITONBACKEND_ModelInstance *instance) {
  void *vi = nullptr;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceState(instance, &vi);
  if (e == nullptr) {
    try {
      ifd_pt_instance_free(static_cast<pt_instance_t *>(vi));
    } catch (const std::exception &ex) {
      ifd_pt_log(TRITONSERVER_LOG_ERROR, "pytorch backend: %s",
                 ifd_pt_what(ex).c_str());
    }
  }
  return e;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request **requests,
    const uint32_t request_count) {
  void *vi = nullptr;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceState(instance, &vi);
  if (e != nullptr) return e;
  /* From here the requests are ours: each is answered and released
   * (ifd_pt_execute catches what libtorch throws). */
  ifd_pt_execute(static_cast<pt_instance_t *>(vi), requests, request_count);
  return nullptr;
}

}  // extern "C"

/*
 * backend_api/backends/onnxruntime/ort_api.h - the part of ONNX Runtime's C
 * API that the onnxruntime backend uses, declared by us.
 *
 * ONNX Runtime ships its C header only in its source tree and SDK archives,
 * neither of which the build can reach; the library itself comes from the
 * npm package onnxruntime-node (third_party/install-onnxruntime.sh). So this
 * file declares, from the public header's facts, what we call: the one
 * exported symbol OrtGetApiBase, the OrtApiBase and OrtApi function tables,
 * the opaque handle types, OrtAllocator and the enums with their values.
 * Names and signatures are ONNX Runtime's own so code reads like any other
 * ORT client; nothing here is ours except IFD_ORT_API_VERSION and
 * ifd_ort_unused_fn.
 *
 * The OrtApi table: ORT only ever appends members, so the table of API
 * version N is a prefix of the table of every later version. The order below
 * follows the published header of API version 24 (ORT 1.24); the members of
 * versions 1 to 12 were checked against the slot numbers ORT itself asserts
 * for each version's last member (the _Static_asserts at the end). The table
 * stops after AllocatorGetStats, the last member we use (slot 319, API 23).
 * Members we do not call are declared with the placeholder type
 * ifd_ort_unused_fn under their real names, so the offsets stay right and a
 * call to one of them with arguments fails to compile. A comment gives the
 * slot index every ten members. test/unit/test_ort_api.c calls most typed
 * slots on the real library: a wrong slot crashes or misbehaves there.
 *
 * Conventions (ORT's): a function returning OrtStatus * returns NULL on
 * success, else an error the caller owns and frees with ReleaseStatus.
 * Release* functions return void and accept NULL. Strings ORT returns through
 * an OrtAllocator (SessionGetInputName, ...) are freed with that allocator
 * (AllocatorFree). ORT's calling convention (ORT_API_CALL) is the platform's
 * default on Linux, and ORTCHAR_T is char, so paths are const char *.
 */
#ifndef IFD_ORT_API_H
#define IFD_ORT_API_H

#include <stddef.h>
#include <stdint.h>

/* The API version we ask OrtApiBase.GetApi for: the version of the header
 * whose order the table follows. ORT 1.30 serves versions 1 to 30; an older
 * library answers NULL, which the backend reports as an unsupported runtime. */
#define IFD_ORT_API_VERSION 24u

/* The ORT release third_party/install-onnxruntime.sh installs and the unit
 * test expects GetVersionString() to report. */
#define IFD_ORT_RUNTIME_VERSION "1.30.0"

/* ---- opaque handles ---------------------------------------------------------
 * Created and freed only by ORT's Create* / Release* functions. */
typedef struct OrtEnv OrtEnv;
typedef struct OrtStatus OrtStatus; /* NULL means success */
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtIoBinding OrtIoBinding;
typedef struct OrtSession OrtSession;
typedef struct OrtValue OrtValue;
typedef struct OrtRunOptions OrtRunOptions;
typedef struct OrtTypeInfo OrtTypeInfo;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtThreadingOptions OrtThreadingOptions;
typedef struct OrtCUDAProviderOptionsV2 OrtCUDAProviderOptionsV2;
typedef struct OrtKeyValuePairs OrtKeyValuePairs; /* since API 22 */

/* ---- enums (their values are ABI) ---------------------------------------- */

/* Element types; the values are ONNX's TensorProto.DataType numbers. */
typedef enum ONNXTensorElementDataType {
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED = 0,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT = 1,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8 = 2,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8 = 3,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16 = 4,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16 = 5,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32 = 6,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 = 7,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING = 8, /* ORT-owned strings, see Fill* */
  ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL = 9,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 = 10,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE = 11,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32 = 12,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64 = 13,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64 = 14,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128 = 15,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16 = 16,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN = 17,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ = 18,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2 = 19,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ = 20,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT4 = 21, /* two packed per byte */
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4 = 22,  /* two packed per byte */
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT4E2M1 = 23,
  /* The API 24 header lists the 2-bit types right after FLOAT4E2M1 without
   * values, which makes them 24 and 25 (ONNX itself numbers them 25 and 26,
   * after FLOAT8E8M0). Triton has no type for any of the sub-byte kinds, so
   * the backend rejects them and never relies on these two numbers. */
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT2 = 24,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT2 = 25,
} ONNXTensorElementDataType;

/* What an OrtValue or an OrtTypeInfo holds. */
typedef enum ONNXType {
  ONNX_TYPE_UNKNOWN = 0,
  ONNX_TYPE_TENSOR = 1,
  ONNX_TYPE_SEQUENCE = 2,
  ONNX_TYPE_MAP = 3,
  ONNX_TYPE_OPAQUE = 4,
  ONNX_TYPE_SPARSETENSOR = 5,
  ONNX_TYPE_OPTIONAL = 6,
} ONNXType;

/* The code inside an OrtStatus. */
typedef enum OrtErrorCode {
  ORT_OK = 0,
  ORT_FAIL = 1,
  ORT_INVALID_ARGUMENT = 2,
  ORT_NO_SUCHFILE = 3,
  ORT_NO_MODEL = 4,
  ORT_ENGINE_ERROR = 5,
  ORT_RUNTIME_EXCEPTION = 6,
  ORT_INVALID_PROTOBUF = 7,
  ORT_MODEL_LOADED = 8,
  ORT_NOT_IMPLEMENTED = 9,
  ORT_INVALID_GRAPH = 10,
  ORT_EP_FAIL = 11,
  ORT_MODEL_LOAD_CANCELED = 12,
  ORT_MODEL_REQUIRES_COMPILATION = 13,
  ORT_NOT_FOUND = 14,
} OrtErrorCode;

/* Minimum severity ORT logs (for the env, a session or a run). */
typedef enum OrtLoggingLevel {
  ORT_LOGGING_LEVEL_VERBOSE = 0,
  ORT_LOGGING_LEVEL_INFO = 1,
  ORT_LOGGING_LEVEL_WARNING = 2,
  ORT_LOGGING_LEVEL_ERROR = 3,
  ORT_LOGGING_LEVEL_FATAL = 4,
} OrtLoggingLevel;

typedef enum GraphOptimizationLevel {
  ORT_DISABLE_ALL = 0,
  ORT_ENABLE_BASIC = 1,
  ORT_ENABLE_EXTENDED = 2,
  ORT_ENABLE_LAYOUT = 3, /* since ORT 1.23 */
  ORT_ENABLE_ALL = 99,
} GraphOptimizationLevel;

typedef enum ExecutionMode {
  ORT_SEQUENTIAL = 0,
  ORT_PARALLEL = 1,
} ExecutionMode;

typedef enum OrtAllocatorType {
  OrtInvalidAllocator = -1,
  OrtDeviceAllocator = 0,
  OrtArenaAllocator = 1,
  OrtReadOnlyAllocator = 2, /* since ORT 1.24 */
} OrtAllocatorType;

/* Which of an execution provider's memories; CPU memory for the CPU EP is
 * OrtMemTypeDefault. */
typedef enum OrtMemType {
  OrtMemTypeCPUInput = -2,  /* CPU memory a non-CPU EP reads */
  OrtMemTypeCPUOutput = -1, /* CPU-accessible memory a non-CPU EP writes */
  OrtMemTypeCPU = OrtMemTypeCPUOutput,
  OrtMemTypeDefault = 0, /* the EP's own memory */
} OrtMemType;

/* ---- OrtAllocator -----------------------------------------------------------
 * The allocator interface, a struct of function pointers. We only use the
 * allocators ORT hands out (GetAllocatorWithDefaultOptions, CreateAllocator)
 * and go through AllocatorAlloc / AllocatorFree / AllocatorGetStats rather
 * than these members; a member after Info exists only when `version` is at
 * least the API that added it. The layout in API 24: */
typedef struct OrtAllocator {
  uint32_t version; /* the API version its author built against */
  void *(*Alloc)(struct OrtAllocator *self, size_t size);
  void (*Free)(struct OrtAllocator *self, void *p);
  const OrtMemoryInfo *(*Info)(const struct OrtAllocator *self);
  /* Since ORT 1.18: allocation for session initialization; may be NULL. */
  void *(*Reserve)(struct OrtAllocator *self, size_t size);
  /* Since ORT 1.23; may be NULL. */
  OrtStatus *(*GetStats)(const struct OrtAllocator *self,
                         OrtKeyValuePairs **out);
  /* Since ORT 1.23: allocation on an OrtSyncStream; may be NULL. */
  void *(*AllocOnStream)(struct OrtAllocator *self, size_t size, void *stream);
} OrtAllocator;

/* ---- the function tables ------------------------------------------------ */

/* The type of the OrtApi members we do not call. Only the slot matters. */
typedef void (*ifd_ort_unused_fn)(void);

typedef struct OrtApi OrtApi;

/* What OrtGetApiBase returns: a static table owned by the library. */
typedef struct OrtApiBase {
  /* The function table of API `version`, or NULL when this library does not
   * serve that version (it is older than the header we follow). The table is
   * static: never freed. */
  const OrtApi *(*GetApi)(uint32_t version);
  /* The library's release, e.g. "1.30.0"; static. */
  const char *(*GetVersionString)(void);
} OrtApiBase;

/* The only symbol we take from libonnxruntime.so.1. */
const OrtApiBase *OrtGetApiBase(void);

/*
 * The table. Typed members behave as ORT documents them; the slot index is
 * in brackets every ten members, and each API version opens with a rule.
 *
 * Ownership in short: Create* outputs belong to the caller (Release*);
 * CastTypeInfoToTensorInfo's output is borrowed from its OrtTypeInfo;
 * CreateTensorWithDataAsOrtValue borrows the caller's buffer, which must
 * outlive the OrtValue; GetTensorMutableData points into the value;
 * GetAvailableProviders' list is freed with ReleaseAvailableProviders;
 * GetBoundOutputNames / GetBoundOutputValues allocate their arrays with the
 * allocator passed in (free with AllocatorFree; each value with ReleaseValue);
 * GetKeyValue / GetKeyValuePairs return pointers owned by the pairs object.
 */
struct OrtApi {
  /* ---- API 1 ---- */
  /* [0] */
  OrtStatus *(*CreateStatus)(OrtErrorCode code, const char *msg);
  OrtErrorCode (*GetErrorCode)(const OrtStatus *status);
  const char *(*GetErrorMessage)(const OrtStatus *status);
  OrtStatus *(*CreateEnv)(OrtLoggingLevel level, const char *logid,
                          OrtEnv **out);
  ifd_ort_unused_fn CreateEnvWithCustomLogger;
  ifd_ort_unused_fn EnableTelemetryEvents;
  OrtStatus *(*DisableTelemetryEvents)(const OrtEnv *env);
  OrtStatus *(*CreateSession)(const OrtEnv *env, const char *model_path,
                              const OrtSessionOptions *options,
                              OrtSession **out);
  OrtStatus *(*CreateSessionFromArray)(const OrtEnv *env,
                                       const void *model_data,
                                       size_t model_data_length,
                                       const OrtSessionOptions *options,
                                       OrtSession **out);
  OrtStatus *(*Run)(OrtSession *session, const OrtRunOptions *run_options,
                    const char *const *input_names,
                    const OrtValue *const *inputs, size_t input_len,
                    const char *const *output_names, size_t output_names_len,
                    OrtValue **outputs);
  /* [10] */
  OrtStatus *(*CreateSessionOptions)(OrtSessionOptions **out);
  OrtStatus *(*SetOptimizedModelFilePath)(OrtSessionOptions *options,
                                          const char *path);
  ifd_ort_unused_fn CloneSessionOptions;
  OrtStatus *(*SetSessionExecutionMode)(OrtSessionOptions *options,
                                        ExecutionMode mode);
  ifd_ort_unused_fn EnableProfiling;
  ifd_ort_unused_fn DisableProfiling;
  OrtStatus *(*EnableMemPattern)(OrtSessionOptions *options);
  OrtStatus *(*DisableMemPattern)(OrtSessionOptions *options);
  OrtStatus *(*EnableCpuMemArena)(OrtSessionOptions *options);
  OrtStatus *(*DisableCpuMemArena)(OrtSessionOptions *options);
  /* [20] */
  OrtStatus *(*SetSessionLogId)(OrtSessionOptions *options, const char *logid);
  ifd_ort_unused_fn SetSessionLogVerbosityLevel;
  OrtStatus *(*SetSessionLogSeverityLevel)(OrtSessionOptions *options,
                                           int level);
  OrtStatus *(*SetSessionGraphOptimizationLevel)(OrtSessionOptions *options,
                                                 GraphOptimizationLevel level);
  OrtStatus *(*SetIntraOpNumThreads)(OrtSessionOptions *options, int n);
  OrtStatus *(*SetInterOpNumThreads)(OrtSessionOptions *options, int n);
  ifd_ort_unused_fn CreateCustomOpDomain;
  ifd_ort_unused_fn CustomOpDomain_Add;
  ifd_ort_unused_fn AddCustomOpDomain;
  ifd_ort_unused_fn RegisterCustomOpsLibrary;
  /* [30] */
  OrtStatus *(*SessionGetInputCount)(const OrtSession *session, size_t *out);
  OrtStatus *(*SessionGetOutputCount)(const OrtSession *session, size_t *out);
  OrtStatus *(*SessionGetOverridableInitializerCount)(const OrtSession *session,
                                                      size_t *out);
  OrtStatus *(*SessionGetInputTypeInfo)(const OrtSession *session, size_t index,
                                        OrtTypeInfo **out);
  OrtStatus *(*SessionGetOutputTypeInfo)(const OrtSession *session,
                                         size_t index, OrtTypeInfo **out);
  OrtStatus *(*SessionGetOverridableInitializerTypeInfo)(
      const OrtSession *session, size_t index, OrtTypeInfo **out);
  OrtStatus *(*SessionGetInputName)(const OrtSession *session, size_t index,
                                    OrtAllocator *allocator, char **out);
  OrtStatus *(*SessionGetOutputName)(const OrtSession *session, size_t index,
                                     OrtAllocator *allocator, char **out);
  OrtStatus *(*SessionGetOverridableInitializerName)(const OrtSession *session,
                                                     size_t index,
                                                     OrtAllocator *allocator,
                                                     char **out);
  OrtStatus *(*CreateRunOptions)(OrtRunOptions **out);
  /* [40] */
  ifd_ort_unused_fn RunOptionsSetRunLogVerbosityLevel;
  OrtStatus *(*RunOptionsSetRunLogSeverityLevel)(OrtRunOptions *options,
                                                 int level);
  OrtStatus *(*RunOptionsSetRunTag)(OrtRunOptions *options, const char *tag);
  ifd_ort_unused_fn RunOptionsGetRunLogVerbosityLevel;
  OrtStatus *(*RunOptionsGetRunLogSeverityLevel)(const OrtRunOptions *options,
                                                 int *out);
  OrtStatus *(*RunOptionsGetRunTag)(const OrtRunOptions *options,
                                    const char **out);
  OrtStatus *(*RunOptionsSetTerminate)(OrtRunOptions *options);
  OrtStatus *(*RunOptionsUnsetTerminate)(OrtRunOptions *options);
  OrtStatus *(*CreateTensorAsOrtValue)(OrtAllocator *allocator,
                                       const int64_t *shape, size_t shape_len,
                                       ONNXTensorElementDataType type,
                                       OrtValue **out);
  OrtStatus *(*CreateTensorWithDataAsOrtValue)(const OrtMemoryInfo *info,
                                               void *data, size_t data_len,
                                               const int64_t *shape,
                                               size_t shape_len,
                                               ONNXTensorElementDataType type,
                                               OrtValue **out);
  /* [50] */
  OrtStatus *(*IsTensor)(const OrtValue *value, int *out);
  OrtStatus *(*GetTensorMutableData)(OrtValue *value, void **out);
  OrtStatus *(*FillStringTensor)(OrtValue *value, const char *const *s,
                                 size_t s_len);
  OrtStatus *(*GetStringTensorDataLength)(const OrtValue *value, size_t *out);
  OrtStatus *(*GetStringTensorContent)(const OrtValue *value, void *s,
                                       size_t s_len, size_t *offsets,
                                       size_t offsets_len);
  OrtStatus *(*CastTypeInfoToTensorInfo)(const OrtTypeInfo *type_info,
                                         const OrtTensorTypeAndShapeInfo **out);
  OrtStatus *(*GetOnnxTypeFromTypeInfo)(const OrtTypeInfo *type_info,
                                        ONNXType *out);
  ifd_ort_unused_fn CreateTensorTypeAndShapeInfo;
  ifd_ort_unused_fn SetTensorElementType;
  ifd_ort_unused_fn SetDimensions;
  /* [60] */
  OrtStatus *(*GetTensorElementType)(const OrtTensorTypeAndShapeInfo *info,
                                     ONNXTensorElementDataType *out);
  OrtStatus *(*GetDimensionsCount)(const OrtTensorTypeAndShapeInfo *info,
                                   size_t *out);
  OrtStatus *(*GetDimensions)(const OrtTensorTypeAndShapeInfo *info,
                              int64_t *dims, size_t dims_len);
  OrtStatus *(*GetSymbolicDimensions)(const OrtTensorTypeAndShapeInfo *info,
                                      const char **dim_params,
                                      size_t dim_params_len);
  OrtStatus *(*GetTensorShapeElementCount)(
      const OrtTensorTypeAndShapeInfo *info, size_t *out);
  OrtStatus *(*GetTensorTypeAndShape)(const OrtValue *value,
                                      OrtTensorTypeAndShapeInfo **out);
  OrtStatus *(*GetTypeInfo)(const OrtValue *value, OrtTypeInfo **out);
  OrtStatus *(*GetValueType)(const OrtValue *value, ONNXType *out);
  OrtStatus *(*CreateMemoryInfo)(const char *name, OrtAllocatorType type,
                                 int id, OrtMemType mem_type,
                                 OrtMemoryInfo **out);
  OrtStatus *(*CreateCpuMemoryInfo)(OrtAllocatorType type, OrtMemType mem_type,
                                    OrtMemoryInfo **out);
  /* [70] */
  OrtStatus *(*CompareMemoryInfo)(const OrtMemoryInfo *a,
                                  const OrtMemoryInfo *b, int *out);
  OrtStatus *(*MemoryInfoGetName)(const OrtMemoryInfo *info, const char **out);
  OrtStatus *(*MemoryInfoGetId)(const OrtMemoryInfo *info, int *out);
  OrtStatus *(*MemoryInfoGetMemType)(const OrtMemoryInfo *info,
                                     OrtMemType *out);
  OrtStatus *(*MemoryInfoGetType)(const OrtMemoryInfo *info,
                                  OrtAllocatorType *out);
  OrtStatus *(*AllocatorAlloc)(OrtAllocator *allocator, size_t size,
                               void **out);
  OrtStatus *(*AllocatorFree)(OrtAllocator *allocator, void *p);
  OrtStatus *(*AllocatorGetInfo)(const OrtAllocator *allocator,
                                 const OrtMemoryInfo **out);
  OrtStatus *(*GetAllocatorWithDefaultOptions)(OrtAllocator **out);
  OrtStatus *(*AddFreeDimensionOverride)(OrtSessionOptions *options,
                                         const char *dim_denotation,
                                         int64_t dim_value);
  /* [80] */
  ifd_ort_unused_fn GetValue;
  ifd_ort_unused_fn GetValueCount;
  ifd_ort_unused_fn CreateValue;
  ifd_ort_unused_fn CreateOpaqueValue;
  ifd_ort_unused_fn GetOpaqueValue;
  ifd_ort_unused_fn KernelInfoGetAttribute_float;
  ifd_ort_unused_fn KernelInfoGetAttribute_int64;
  ifd_ort_unused_fn KernelInfoGetAttribute_string;
  ifd_ort_unused_fn KernelContext_GetInputCount;
  ifd_ort_unused_fn KernelContext_GetOutputCount;
  /* [90] */
  ifd_ort_unused_fn KernelContext_GetInput;
  ifd_ort_unused_fn KernelContext_GetOutput;
  void (*ReleaseEnv)(OrtEnv *p);
  void (*ReleaseStatus)(OrtStatus *p);
  void (*ReleaseMemoryInfo)(OrtMemoryInfo *p);
  void (*ReleaseSession)(OrtSession *p);
  void (*ReleaseValue)(OrtValue *p);
  void (*ReleaseRunOptions)(OrtRunOptions *p);
  void (*ReleaseTypeInfo)(OrtTypeInfo *p);
  void (*ReleaseTensorTypeAndShapeInfo)(OrtTensorTypeAndShapeInfo *p);
  /* [100] */
  void (*ReleaseSessionOptions)(OrtSessionOptions *p);
  ifd_ort_unused_fn ReleaseCustomOpDomain;

  /* ---- API 2 ---- */
  ifd_ort_unused_fn GetDenotationFromTypeInfo;
  ifd_ort_unused_fn CastTypeInfoToMapTypeInfo;
  ifd_ort_unused_fn CastTypeInfoToSequenceTypeInfo;
  ifd_ort_unused_fn GetMapKeyType;
  ifd_ort_unused_fn GetMapValueType;
  ifd_ort_unused_fn GetSequenceElementType;
  ifd_ort_unused_fn ReleaseMapTypeInfo;
  ifd_ort_unused_fn ReleaseSequenceTypeInfo;
  /* [110] */
  ifd_ort_unused_fn SessionEndProfiling;
  ifd_ort_unused_fn SessionGetModelMetadata;
  ifd_ort_unused_fn ModelMetadataGetProducerName;
  ifd_ort_unused_fn ModelMetadataGetGraphName;
  ifd_ort_unused_fn ModelMetadataGetDomain;
  ifd_ort_unused_fn ModelMetadataGetDescription;
  ifd_ort_unused_fn ModelMetadataLookupCustomMetadataMap;
  ifd_ort_unused_fn ModelMetadataGetVersion;
  ifd_ort_unused_fn ReleaseModelMetadata;

  /* ---- API 3 ---- */
  OrtStatus *(*CreateEnvWithGlobalThreadPools)(
      OrtLoggingLevel level, const char *logid,
      const OrtThreadingOptions *tp_options, OrtEnv **out);
  /* [120] */
  OrtStatus *(*DisablePerSessionThreads)(OrtSessionOptions *options);
  OrtStatus *(*CreateThreadingOptions)(OrtThreadingOptions **out);
  void (*ReleaseThreadingOptions)(OrtThreadingOptions *p);
  ifd_ort_unused_fn ModelMetadataGetCustomMetadataMapKeys;
  OrtStatus *(*AddFreeDimensionOverrideByName)(OrtSessionOptions *options,
                                               const char *dim_name,
                                               int64_t dim_value);

  /* ---- API 4 ---- */
  OrtStatus *(*GetAvailableProviders)(char ***out, int *count);
  OrtStatus *(*ReleaseAvailableProviders)(char **providers, int count);

  /* ---- API 5 ---- */
  OrtStatus *(*GetStringTensorElementLength)(const OrtValue *value,
                                             size_t index, size_t *out);
  OrtStatus *(*GetStringTensorElement)(const OrtValue *value, size_t s_len,
                                       size_t index, void *s);
  OrtStatus *(*FillStringTensorElement)(OrtValue *value, const char *s,
                                        size_t index);
  /* [130] */
  OrtStatus *(*AddSessionConfigEntry)(OrtSessionOptions *options,
                                      const char *key, const char *value);
  OrtStatus *(*CreateAllocator)(const OrtSession *session,
                                const OrtMemoryInfo *info, OrtAllocator **out);
  void (*ReleaseAllocator)(OrtAllocator *p);
  OrtStatus *(*RunWithBinding)(OrtSession *session,
                               const OrtRunOptions *run_options,
                               const OrtIoBinding *binding);
  OrtStatus *(*CreateIoBinding)(OrtSession *session, OrtIoBinding **out);
  void (*ReleaseIoBinding)(OrtIoBinding *p);
  OrtStatus *(*BindInput)(OrtIoBinding *binding, const char *name,
                          const OrtValue *value);
  OrtStatus *(*BindOutput)(OrtIoBinding *binding, const char *name,
                           const OrtValue *value);
  OrtStatus *(*BindOutputToDevice)(OrtIoBinding *binding, const char *name,
                                   const OrtMemoryInfo *info);
  OrtStatus *(*GetBoundOutputNames)(const OrtIoBinding *binding,
                                    OrtAllocator *allocator, char **buffer,
                                    size_t **lengths, size_t *count);
  /* [140] */
  OrtStatus *(*GetBoundOutputValues)(const OrtIoBinding *binding,
                                     OrtAllocator *allocator, OrtValue ***out,
                                     size_t *count);
  void (*ClearBoundInputs)(OrtIoBinding *binding);
  void (*ClearBoundOutputs)(OrtIoBinding *binding);
  ifd_ort_unused_fn TensorAt;
  ifd_ort_unused_fn CreateAndRegisterAllocator;
  ifd_ort_unused_fn SetLanguageProjection;
  ifd_ort_unused_fn SessionGetProfilingStartTimeNs;
  OrtStatus *(*SetGlobalIntraOpNumThreads)(OrtThreadingOptions *tp_options,
                                           int n);
  OrtStatus *(*SetGlobalInterOpNumThreads)(OrtThreadingOptions *tp_options,
                                           int n);
  OrtStatus *(*SetGlobalSpinControl)(OrtThreadingOptions *tp_options,
                                     int allow_spinning);

  /* ---- API 6 ---- */
  /* [150] */
  ifd_ort_unused_fn AddInitializer;
  ifd_ort_unused_fn CreateEnvWithCustomLoggerAndGlobalThreadPools;
  ifd_ort_unused_fn SessionOptionsAppendExecutionProvider_CUDA;
  ifd_ort_unused_fn SessionOptionsAppendExecutionProvider_ROCM;
  ifd_ort_unused_fn SessionOptionsAppendExecutionProvider_OpenVINO;
  ifd_ort_unused_fn SetGlobalDenormalAsZero;
  ifd_ort_unused_fn CreateArenaCfg;
  ifd_ort_unused_fn ReleaseArenaCfg;

  /* ---- API 7 ---- */
  ifd_ort_unused_fn ModelMetadataGetGraphDescription;
  ifd_ort_unused_fn SessionOptionsAppendExecutionProvider_TensorRT;
  /* [160] */
  ifd_ort_unused_fn SetCurrentGpuDeviceId;
  ifd_ort_unused_fn GetCurrentGpuDeviceId;

  /* ---- API 8 ---- */
  ifd_ort_unused_fn KernelInfoGetAttributeArray_float;
  ifd_ort_unused_fn KernelInfoGetAttributeArray_int64;
  ifd_ort_unused_fn CreateArenaCfgV2;
  OrtStatus *(*AddRunConfigEntry)(OrtRunOptions *options, const char *key,
                                  const char *value);
  ifd_ort_unused_fn CreatePrepackedWeightsContainer;
  ifd_ort_unused_fn ReleasePrepackedWeightsContainer;
  ifd_ort_unused_fn CreateSessionWithPrepackedWeightsContainer;
  ifd_ort_unused_fn CreateSessionFromArrayWithPrepackedWeightsContainer;

  /* ---- API 9 ---- */
  /* [170] */
  ifd_ort_unused_fn SessionOptionsAppendExecutionProvider_TensorRT_V2;
  ifd_ort_unused_fn CreateTensorRTProviderOptions;
  ifd_ort_unused_fn UpdateTensorRTProviderOptions;
  ifd_ort_unused_fn GetTensorRTProviderOptionsAsString;
  ifd_ort_unused_fn ReleaseTensorRTProviderOptions;
  ifd_ort_unused_fn EnableOrtCustomOps;
  ifd_ort_unused_fn RegisterAllocator;
  ifd_ort_unused_fn UnregisterAllocator;
  ifd_ort_unused_fn IsSparseTensor;
  ifd_ort_unused_fn CreateSparseTensorAsOrtValue;
  /* [180] */
  ifd_ort_unused_fn FillSparseTensorCoo;
  ifd_ort_unused_fn FillSparseTensorCsr;
  ifd_ort_unused_fn FillSparseTensorBlockSparse;
  ifd_ort_unused_fn CreateSparseTensorWithValuesAsOrtValue;
  ifd_ort_unused_fn UseCooIndices;
  ifd_ort_unused_fn UseCsrIndices;
  ifd_ort_unused_fn UseBlockSparseIndices;
  ifd_ort_unused_fn GetSparseTensorFormat;
  ifd_ort_unused_fn GetSparseTensorValuesTypeAndShape;
  ifd_ort_unused_fn GetSparseTensorValues;
  /* [190] */
  ifd_ort_unused_fn GetSparseTensorIndicesTypeShape;
  ifd_ort_unused_fn GetSparseTensorIndices;

  /* ---- API 10 ---- */
  OrtStatus *(*HasValue)(const OrtValue *value, int *out);
  ifd_ort_unused_fn KernelContext_GetGPUComputeStream;
  OrtStatus *(*GetTensorMemoryInfo)(const OrtValue *value,
                                    const OrtMemoryInfo **out);
  ifd_ort_unused_fn GetExecutionProviderApi;
  ifd_ort_unused_fn SessionOptionsSetCustomCreateThreadFn;
  ifd_ort_unused_fn SessionOptionsSetCustomThreadCreationOptions;
  ifd_ort_unused_fn SessionOptionsSetCustomJoinThreadFn;
  ifd_ort_unused_fn SetGlobalCustomCreateThreadFn;
  /* [200] */
  ifd_ort_unused_fn SetGlobalCustomThreadCreationOptions;
  ifd_ort_unused_fn SetGlobalCustomJoinThreadFn;
  OrtStatus *(*SynchronizeBoundInputs)(OrtIoBinding *binding);
  OrtStatus *(*SynchronizeBoundOutputs)(OrtIoBinding *binding);

  /* ---- API 11 ---- */
  OrtStatus *(*SessionOptionsAppendExecutionProvider_CUDA_V2)(
      OrtSessionOptions *options, const OrtCUDAProviderOptionsV2 *cuda_options);
  OrtStatus *(*CreateCUDAProviderOptions)(OrtCUDAProviderOptionsV2 **out);
  OrtStatus *(*UpdateCUDAProviderOptions)(
      OrtCUDAProviderOptionsV2 *cuda_options, const char *const *keys,
      const char *const *values, size_t num_keys);
  OrtStatus *(*GetCUDAProviderOptionsAsString)(
      const OrtCUDAProviderOptionsV2 *cuda_options, OrtAllocator *allocator,
      char **out);
  void (*ReleaseCUDAProviderOptions)(OrtCUDAProviderOptionsV2 *p);
  ifd_ort_unused_fn SessionOptionsAppendExecutionProvider_MIGraphX;

  /* ---- API 12 ---- */
  /* [210] */
  ifd_ort_unused_fn AddExternalInitializers;
  ifd_ort_unused_fn CreateOpAttr;
  ifd_ort_unused_fn ReleaseOpAttr;
  ifd_ort_unused_fn CreateOp;
  ifd_ort_unused_fn InvokeOp;
  ifd_ort_unused_fn ReleaseOp;
  OrtStatus *(*SessionOptionsAppendExecutionProvider)(
      OrtSessionOptions *options, const char *provider_name,
      const char *const *keys, const char *const *values, size_t num_keys);
  ifd_ort_unused_fn CopyKernelInfo;
  ifd_ort_unused_fn ReleaseKernelInfo;

  /* ---- API 13 ---- */
  ifd_ort_unused_fn GetTrainingApi;
  /* [220] */
  ifd_ort_unused_fn SessionOptionsAppendExecutionProvider_CANN;
  ifd_ort_unused_fn CreateCANNProviderOptions;
  ifd_ort_unused_fn UpdateCANNProviderOptions;
  ifd_ort_unused_fn GetCANNProviderOptionsAsString;
  ifd_ort_unused_fn ReleaseCANNProviderOptions;

  /* ---- API 14 ---- */
  ifd_ort_unused_fn MemoryInfoGetDeviceType;
  ifd_ort_unused_fn UpdateEnvWithCustomLogLevel;
  ifd_ort_unused_fn SetGlobalIntraOpThreadAffinity;
  OrtStatus *(*RegisterCustomOpsLibrary_V2)(OrtSessionOptions *options,
                                            const char *library_name);
  ifd_ort_unused_fn RegisterCustomOpsUsingFunction;
  /* [230] */
  ifd_ort_unused_fn KernelInfo_GetInputCount;
  ifd_ort_unused_fn KernelInfo_GetOutputCount;
  ifd_ort_unused_fn KernelInfo_GetInputName;
  ifd_ort_unused_fn KernelInfo_GetOutputName;
  ifd_ort_unused_fn KernelInfo_GetInputTypeInfo;
  ifd_ort_unused_fn KernelInfo_GetOutputTypeInfo;
  ifd_ort_unused_fn KernelInfoGetAttribute_tensor;
  OrtStatus *(*HasSessionConfigEntry)(const OrtSessionOptions *options,
                                      const char *key, int *out);
  OrtStatus *(*GetSessionConfigEntry)(const OrtSessionOptions *options,
                                      const char *key, char *value,
                                      size_t *size);

  /* ---- API 15 ---- */
  ifd_ort_unused_fn SessionOptionsAppendExecutionProvider_Dnnl;
  /* [240] */
  ifd_ort_unused_fn CreateDnnlProviderOptions;
  ifd_ort_unused_fn UpdateDnnlProviderOptions;
  ifd_ort_unused_fn GetDnnlProviderOptionsAsString;
  ifd_ort_unused_fn ReleaseDnnlProviderOptions;
  ifd_ort_unused_fn KernelInfo_GetNodeName;
  ifd_ort_unused_fn KernelInfo_GetLogger;
  ifd_ort_unused_fn KernelContext_GetLogger;
  ifd_ort_unused_fn Logger_LogMessage;
  ifd_ort_unused_fn Logger_GetLoggingSeverityLevel;
  ifd_ort_unused_fn KernelInfoGetConstantInput_tensor;
  /* [250] */
  ifd_ort_unused_fn CastTypeInfoToOptionalTypeInfo;
  ifd_ort_unused_fn GetOptionalContainedTypeInfo;
  ifd_ort_unused_fn GetResizedStringTensorElementBuffer;
  ifd_ort_unused_fn KernelContext_GetAllocator;
  const char *(*GetBuildInfoString)(void);

  /* ---- API 16 ---- */
  ifd_ort_unused_fn CreateROCMProviderOptions;
  ifd_ort_unused_fn UpdateROCMProviderOptions;
  ifd_ort_unused_fn GetROCMProviderOptionsAsString;
  ifd_ort_unused_fn ReleaseROCMProviderOptions;
  ifd_ort_unused_fn CreateAndRegisterAllocatorV2;
  /* [260] */
  ifd_ort_unused_fn RunAsync;
  ifd_ort_unused_fn UpdateTensorRTProviderOptionsWithValue;
  ifd_ort_unused_fn GetTensorRTProviderOptionsByName;
  ifd_ort_unused_fn UpdateCUDAProviderOptionsWithValue;
  ifd_ort_unused_fn GetCUDAProviderOptionsByName;
  ifd_ort_unused_fn KernelContext_GetResource;

  /* ---- API 17 ---- */
  ifd_ort_unused_fn SetUserLoggingFunction;
  ifd_ort_unused_fn ShapeInferContext_GetInputCount;
  ifd_ort_unused_fn ShapeInferContext_GetInputTypeShape;
  ifd_ort_unused_fn ShapeInferContext_GetAttribute;
  /* [270] */
  ifd_ort_unused_fn ShapeInferContext_SetOutputTypeShape;
  ifd_ort_unused_fn SetSymbolicDimensions;
  ifd_ort_unused_fn ReadOpAttr;
  ifd_ort_unused_fn SetDeterministicCompute;
  ifd_ort_unused_fn KernelContext_ParallelFor;
  ifd_ort_unused_fn SessionOptionsAppendExecutionProvider_OpenVINO_V2;

  /* ---- API 18 ---- */
  ifd_ort_unused_fn SessionOptionsAppendExecutionProvider_VitisAI;
  ifd_ort_unused_fn KernelContext_GetScratchBuffer;
  ifd_ort_unused_fn KernelInfoGetAllocator;
  ifd_ort_unused_fn AddExternalInitializersFromFilesInMemory;

  /* ---- API 20 ---- */
  /* [280] */
  ifd_ort_unused_fn CreateLoraAdapter;
  ifd_ort_unused_fn CreateLoraAdapterFromArray;
  ifd_ort_unused_fn ReleaseLoraAdapter;
  ifd_ort_unused_fn RunOptionsAddActiveLoraAdapter;
  ifd_ort_unused_fn SetEpDynamicOptions;

  /* ---- API 22 ---- */
  ifd_ort_unused_fn ReleaseValueInfo;
  ifd_ort_unused_fn ReleaseNode;
  ifd_ort_unused_fn ReleaseGraph;
  ifd_ort_unused_fn ReleaseModel;
  ifd_ort_unused_fn GetValueInfoName;
  /* [290] */
  ifd_ort_unused_fn GetValueInfoTypeInfo;
  ifd_ort_unused_fn GetModelEditorApi;
  ifd_ort_unused_fn CreateTensorWithDataAndDeleterAsOrtValue;
  ifd_ort_unused_fn SessionOptionsSetLoadCancellationFlag;
  ifd_ort_unused_fn GetCompileApi;
  void (*CreateKeyValuePairs)(OrtKeyValuePairs **out);
  void (*AddKeyValuePair)(OrtKeyValuePairs *kvps, const char *key,
                          const char *value);
  const char *(*GetKeyValue)(const OrtKeyValuePairs *kvps, const char *key);
  void (*GetKeyValuePairs)(const OrtKeyValuePairs *kvps,
                           const char *const **keys, const char *const **values,
                           size_t *num_entries);
  void (*RemoveKeyValuePair)(OrtKeyValuePairs *kvps, const char *key);
  /* [300] */
  void (*ReleaseKeyValuePairs)(OrtKeyValuePairs *p);
  ifd_ort_unused_fn RegisterExecutionProviderLibrary;
  ifd_ort_unused_fn UnregisterExecutionProviderLibrary;
  ifd_ort_unused_fn GetEpDevices;
  ifd_ort_unused_fn SessionOptionsAppendExecutionProvider_V2;
  ifd_ort_unused_fn SessionOptionsSetEpSelectionPolicy;
  ifd_ort_unused_fn SessionOptionsSetEpSelectionPolicyDelegate;
  ifd_ort_unused_fn HardwareDevice_Type;
  ifd_ort_unused_fn HardwareDevice_VendorId;
  ifd_ort_unused_fn HardwareDevice_Vendor;
  /* [310] */
  ifd_ort_unused_fn HardwareDevice_DeviceId;
  ifd_ort_unused_fn HardwareDevice_Metadata;
  ifd_ort_unused_fn EpDevice_EpName;
  ifd_ort_unused_fn EpDevice_EpVendor;
  ifd_ort_unused_fn EpDevice_EpMetadata;
  ifd_ort_unused_fn EpDevice_EpOptions;
  ifd_ort_unused_fn EpDevice_Device;
  ifd_ort_unused_fn GetEpApi;

  /* ---- API 23 ---- */
  OrtStatus *(*GetTensorSizeInBytes)(const OrtValue *value, size_t *out);
  OrtStatus *(*AllocatorGetStats)(const OrtAllocator *allocator,
                                  OrtKeyValuePairs **out);
};

/* Slot numbers ORT asserts for the last member of API versions 1 to 12
 * (offset / pointer size), and the slots of the newest members we call. */
#define IFD__ORT_SLOT(m) (offsetof(OrtApi, m) / sizeof(void *))
_Static_assert(IFD__ORT_SLOT(ReleaseCustomOpDomain) == 101, "API 1");
_Static_assert(IFD__ORT_SLOT(ReleaseModelMetadata) == 118, "API 2");
_Static_assert(IFD__ORT_SLOT(AddFreeDimensionOverrideByName) == 124, "API 3");
_Static_assert(IFD__ORT_SLOT(ReleaseAvailableProviders) == 126, "API 4");
_Static_assert(IFD__ORT_SLOT(SetGlobalSpinControl) == 149, "API 5");
_Static_assert(IFD__ORT_SLOT(ReleaseArenaCfg) == 157, "API 6");
_Static_assert(IFD__ORT_SLOT(GetCurrentGpuDeviceId) == 161, "API 7");
_Static_assert(
    IFD__ORT_SLOT(CreateSessionFromArrayWithPrepackedWeightsContainer) == 169,
    "API 8");
_Static_assert(IFD__ORT_SLOT(GetSparseTensorIndices) == 191, "API 9");
_Static_assert(IFD__ORT_SLOT(SynchronizeBoundOutputs) == 203, "API 10");
_Static_assert(IFD__ORT_SLOT(SessionOptionsAppendExecutionProvider_MIGraphX) ==
                   209,
               "API 11");
_Static_assert(IFD__ORT_SLOT(ReleaseKernelInfo) == 218, "API 12");
_Static_assert(IFD__ORT_SLOT(GetBuildInfoString) == 254, "API 15");
_Static_assert(IFD__ORT_SLOT(ReleaseKeyValuePairs) == 300, "API 22");
_Static_assert(IFD__ORT_SLOT(AllocatorGetStats) == 319, "API 23");
_Static_assert(sizeof(OrtApi) == 320 * sizeof(void *), "table length");

#endif /* IFD_ORT_API_H */

/*
 * backend_api/model/loader.c - backend libraries and model lifecycles.
 *
 * Backends are shared libraries found by Triton's search order and shared by
 * every model that names the same file. The registry of open libraries is the
 * only state here touched by several threads (loads run in parallel on the
 * thread pool), so it sits behind one mutex, held across dlopen and
 * TRITONBACKEND_Initialize/Finalize so that a library is initialized exactly
 * once and finalized only after its last model.
 *
 * Lifecycles, as Triton documents them: TRITONBACKEND_Initialize once per
 * library, TRITONBACKEND_ModelInitialize per model version,
 * TRITONBACKEND_ModelInstanceInitialize per instance on the instance's own
 * thread; finalization in the reverse order, the library closed when no model
 * uses it.
 */
#include <dlfcn.h>
#include <jansson.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend_api/internal.h"
#include "base/check.h"
#include "base/log.h"
#include "core/server.h"

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static TRITONBACKEND_Backend *registry; /* guarded by registry_mu */

static int is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Holds iff `path` is `dir` or lies under it (both resolved). */
static int path_within(const char *path, const char *dir) {
  size_t n = strlen(dir);
  if (n > 0 && dir[n - 1] == '/') n--; /* dir is "/" */
  return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/*
 * Finds the backend library of model version `m` as Triton does. The file is
 * the config's `runtime` when set, else libtriton_<backend>.so; it is looked
 * for in the version folder, the model folder, then <backend_dir>/<backend>,
 * and the first folder that holds it wins. A runtime is a name relative to
 * that folder (a leading '/' is dropped, as Triton's path join does) and may
 * name a file in a sub-folder, but the resolved file must stay inside the
 * folder: "../x.so" or a link out of it is refused. Returns 0 with the
 * resolved path in `out`, or IFD_EINVAL with Triton's message.
 */
static int find_library(const ifd_model_t *m, const char *backend,
                        const char *runtime, const char *backend_dir, char *out,
                        size_t size, ifd_errmsg_t *err) {
  char dirs[3][PATH_MAX], cand[PATH_MAX], real_dir[PATH_MAX];
  char libname[PATH_MAX], searched[3 * PATH_MAX + 16];
  int has_runtime = runtime != NULL && runtime[0] != '\0';
  size_t len = 0, name_len;
  int i, n = 0;

  if (has_runtime) {
    while (*runtime == '/') runtime++;
    name_len = (size_t)snprintf(libname, sizeof(libname), "%s", runtime);
  } else {
    name_len =
        (size_t)snprintf(libname, sizeof(libname), "libtriton_%s.so", backend);
  }
  snprintf(dirs[n++], PATH_MAX, "%s/%" PRId64, m->path, m->version);
  snprintf(dirs[n++], PATH_MAX, "%s", m->path);
  if (backend_dir != NULL && backend_dir[0] != '\0')
    snprintf(dirs[n++], PATH_MAX, "%s/%s", backend_dir, backend);
  /* A name too long for a path is found nowhere (and never truncated into
   * another file's name). */
  for (i = 0; name_len < sizeof(libname) && i < n; i++) {
    if ((size_t)snprintf(cand, sizeof(cand), "%s/%s", dirs[i], libname) >=
            sizeof(cand) ||
        !is_file(cand))
      continue;
    if (realpath(cand, out) == NULL || strlen(out) >= size ||
        realpath(dirs[i], real_dir) == NULL)
      return ifd_errf(err, IFD_EIO, "cannot resolve '%s': %s", cand,
                      strerror(errno));
    /* Triton checks only a configured runtime: the default name is the
     * backend's own, from the config's backend field. */
    if (has_runtime && !path_within(out, real_dir))
      return ifd_errf(err, IFD_EINVAL,
                      "backend library name '%s' escapes backend directory "
                      "'%s', for model '%s', check model config runtime field",
                      libname, dirs[i], m->name);
    return 0;
  }

  for (i = 0; i < n && len < sizeof(searched); i++)
    len += (size_t)snprintf(searched + len, sizeof(searched) - len, "%s'%s'",
                            i > 0 ? " " : "", dirs[i]);
  if (has_runtime)
    return ifd_errf(err, IFD_EINVAL,
                    "unable to find backend library '%s' for model '%s', "
                    "searched: %s",
                    libname, m->name, searched);
  return ifd_errf(err, IFD_EINVAL,
                  "unable to find backend library for backend '%s', try "
                  "specifying runtime on the model configuration. Searched: "
                  "%s",
                  backend, searched);
}

void ifd__pref_groups_free(ifd_pref_group_t *g, size_t n) {
  for (size_t i = 0; i < n; i++) free(g[i].gpus);
  free(g);
}

static void backend_free(TRITONBACKEND_Backend *b) {
  ifd__pref_groups_free(b->pref_groups, b->n_pref_groups);
  if (b->dl != NULL) dlclose(b->dl);
  if (b->config != NULL) TRITONSERVER_MessageDelete(b->config);
  free(b->name);
  free(b->path);
  free(b->dir);
  free(b);
}

static void *sym(void *dl, const char *name) {
  return dlsym(dl, name);
}

/* ---- backend attributes ---------------------------------------------------
 */

/* The config's kind for a TRITONSERVER_InstanceGroupKind; -1 when unknown. */
static int config_kind(TRITONSERVER_InstanceGroupKind k) {
  switch (k) {
    case TRITONSERVER_INSTANCEGROUPKIND_AUTO:
      return INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_AUTO;
    case TRITONSERVER_INSTANCEGROUPKIND_CPU:
      return INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_CPU;
    case TRITONSERVER_INSTANCEGROUPKIND_GPU:
      return INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_GPU;
    case TRITONSERVER_INSTANCEGROUPKIND_MODEL:
      return INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_MODEL;
    default:
      return -1;
  }
}

TRITONSERVER_Error *TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup(
    TRITONBACKEND_BackendAttribute *backend_attributes,
    const TRITONSERVER_InstanceGroupKind kind, const uint64_t count,
    const uint64_t *device_ids, const uint64_t id_count) {
  TRITONBACKEND_BackendAttribute *a = backend_attributes;
  ifd_pref_group_t *g;
  int ck = config_kind(kind);
  ARG_CHECK(a != NULL && (device_ids != NULL || id_count == 0));
  if (ck < 0)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "unknown instance group kind");
  if (count > INT32_MAX || id_count > 1024)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "instance group count or device list too "
                                 "large");
  g = realloc(a->groups, (a->n_groups + 1) * sizeof(*g));
  if (g == NULL) goto out_nomem;
  a->groups = g;
  g = &a->groups[a->n_groups];
  memset(g, 0, sizeof(*g));
  g->kind = (Inference__ModelInstanceGroup__Kind)ck;
  g->count = (int32_t)count;
  if (id_count > 0) {
    g->gpus = malloc(id_count * sizeof(*g->gpus));
    if (g->gpus == NULL) goto out_nomem;
    for (uint64_t k = 0; k < id_count; k++)
      g->gpus[k] = device_ids[k] > INT32_MAX ? -1 : (int32_t)device_ids[k];
    g->n_gpus = id_count;
  }
  a->n_groups++;
  return NULL;
out_nomem:
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
}

TRITONSERVER_Error *
TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading(
    TRITONBACKEND_BackendAttribute *backend_attributes, bool enabled) {
  ARG_CHECK(backend_attributes != NULL);
  backend_attributes->parallel = enabled;
  return NULL;
}

/* Asks the backend for its attributes (TRITONBACKEND_GetBackendAttribute,
 * optional), as Triton does once it initialized: preferred instance groups
 * and parallel instance loading. On an error the call's attributes are
 * ignored, as Triton's header says, and the defaults stay (no preference,
 * instances initialized one at a time). */
static void backend_attributes(TRITONBACKEND_Backend *b) {
  typedef TRITONSERVER_Error *(*attr_fn)(TRITONBACKEND_Backend *,
                                         TRITONBACKEND_BackendAttribute *);
  attr_fn fn = (attr_fn)sym(b->dl, "TRITONBACKEND_GetBackendAttribute");
  TRITONBACKEND_BackendAttribute a = {NULL, 0, 0};
  TRITONSERVER_Error *e;
  if (fn == NULL) return;
  e = fn(b, &a);
  if (e != NULL) {
    IFD_WARN(
        "backend '%s': TRITONBACKEND_GetBackendAttribute failed, its "
        "attributes are ignored: %s",
        b->name, TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
    ifd__pref_groups_free(a.groups, a.n_groups);
    return;
  }
  b->pref_groups = a.groups;
  b->n_pref_groups = a.n_groups;
  b->parallel_instances = a.parallel;
}

/* Opens and initializes a backend library. Called with registry_mu held. */
static int backend_open(const char *name, const char *path,
                        const ifd_server_opts_t *o, TRITONBACKEND_Backend **out,
                        ifd_errmsg_t *err) {
  const char *backend_dir = o->backend_dir;
  int strict = o->strict_config;
  TRITONBACKEND_Backend *b = calloc(1, sizeof(*b));
  char *slash, *cfg = NULL;
  int rc, n;

  if (b == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  b->name = strdup(name);
  b->path = strdup(path);
  b->dir = strdup(path);
  if (b->name == NULL || b->path == NULL || b->dir == NULL) {
    rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
    goto out_free;
  }
  slash = strrchr(b->dir, '/');
  if (slash != NULL) *slash = '\0';
  b->policy = TRITONBACKEND_EXECUTION_BLOCKING;

  /* RTLD_LOCAL keeps backends from seeing each other's symbols, as Triton
   * loads them; RTLD_NOW reports a missing symbol here, not mid-request. */
  b->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (b->dl == NULL) {
    rc = ifd_errf(err, IFD_EINVAL, "unable to load backend library '%s': %s",
                  path, dlerror());
    goto out_free;
  }
  b->init = (ifd_tb_backend_fn)sym(b->dl, "TRITONBACKEND_Initialize");
  b->fini = (ifd_tb_backend_fn)sym(b->dl, "TRITONBACKEND_Finalize");
  b->model_init = (ifd_tb_model_fn)sym(b->dl, "TRITONBACKEND_ModelInitialize");
  b->model_fini = (ifd_tb_model_fn)sym(b->dl, "TRITONBACKEND_ModelFinalize");
  b->inst_init =
      (ifd_tb_instance_fn)sym(b->dl, "TRITONBACKEND_ModelInstanceInitialize");
  b->inst_fini =
      (ifd_tb_instance_fn)sym(b->dl, "TRITONBACKEND_ModelInstanceFinalize");
  b->execute =
      (ifd_tb_execute_fn)sym(b->dl, "TRITONBACKEND_ModelInstanceExecute");
  if (b->execute == NULL) {
    rc = ifd_errf(err, IFD_EINVAL,
                  "backend library '%s' does not implement "
                  "TRITONBACKEND_ModelInstanceExecute",
                  path);
    goto out_free;
  }

  /* The backend configuration Triton passes: command-line settings. */
  /* Built with jansson so that a path with quotes or backslashes stays
   * valid JSON. */
  {
    /* std::to_string(double), as tritonserver formats it. */
    char mcc[64];
    json_t *j;
    snprintf(mcc, sizeof(mcc), "%f",
             o->min_compute_capability > 0 ? o->min_compute_capability : 6.0);
    j = json_pack("{s:{s:s, s:s, s:s, s:s}}", "cmdline", "auto-complete-config",
                  strict ? "false" : "true", "backend-directory",
                  backend_dir ? backend_dir : "", "min-compute-capability", mcc,
                  "default-max-batch-size", "4");
    json_t *cmd = j != NULL ? json_object_get(j, "cmdline") : NULL;
    size_t k;
    /* --backend-config settings for every backend, then this one's, over
     * the defaults (values are strings, as Triton passes them). */
    /* tritonserver's global setting for each --model-load-gpu-limit. */
    for (k = 0; cmd != NULL && k < 64; k++) {
      char key[64], val[64];
      if (!((o->gpu_limit_set >> k) & 1)) continue;
      snprintf(key, sizeof(key), "model-load-gpu-limit-device-%zu", k);
      snprintf(val, sizeof(val), "%f", o->gpu_limit[k]);
      json_object_set_new(cmd, key, json_string(val));
    }
    for (k = 0; cmd != NULL && k < o->n_backend_config; k++) {
      const ifd_backend_setting_t *t = &o->backend_config[k];
      if (t->backend[0] == '\0')
        json_object_set_new(cmd, t->setting, json_string(t->value));
    }
    for (k = 0; cmd != NULL && k < o->n_backend_config; k++) {
      const ifd_backend_setting_t *t = &o->backend_config[k];
      if (strcmp(t->backend, name) == 0)
        json_object_set_new(cmd, t->setting, json_string(t->value));
    }
    cfg = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    n = cfg != NULL ? (int)strlen(cfg) : -1;
  }
  if (n < 0 || (b->config = ifd__message_new_owned(cfg, (size_t)n)) == NULL) {
    rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
    goto out_free;
  }

  if (b->init != NULL) {
    TRITONSERVER_Error *e = b->init(b);
    if (e != NULL) {
      rc = ifd__take_error(e, "TRITONBACKEND_Initialize failed", err);
      goto out_free;
    }
  }
  backend_attributes(b);
  IFD_INFO("loaded backend '%s' from %s", name, path);
  *out = b;
  return 0;

out_free:
  backend_free(b);
  return rc;
}

int ifd__backend_acquire(const char *name, const char *path,
                         const ifd_server_opts_t *o,
                         TRITONBACKEND_Backend **out, ifd_errmsg_t *err) {
  TRITONBACKEND_Backend *b;
  int rc = 0;

  pthread_mutex_lock(&registry_mu);
  for (b = registry; b != NULL; b = b->next)
    if (strcmp(b->path, path) == 0) break;
  if (b == NULL) {
    rc = backend_open(name, path, o, &b, err);
    if (rc == 0) {
      b->next = registry;
      registry = b;
    }
  }
  if (rc == 0) {
    b->refs++;
    *out = b;
  }
  pthread_mutex_unlock(&registry_mu);
  return rc;
}

void ifd__backend_release(TRITONBACKEND_Backend *b) {
  TRITONBACKEND_Backend **pp;
  pthread_mutex_lock(&registry_mu);
  IFD_ASSERT(b->refs > 0); /* one release per ifd__backend_acquire */
  if (--b->refs > 0) {
    pthread_mutex_unlock(&registry_mu);
    return;
  }
  for (pp = &registry; *pp != NULL; pp = &(*pp)->next)
    if (*pp == b) {
      *pp = b->next;
      break;
    }
  if (b->fini != NULL) {
    TRITONSERVER_Error *e = b->fini(b);
    if (e != NULL) {
      IFD_ERROR("TRITONBACKEND_Finalize of '%s' failed: %s", b->name,
                TRITONSERVER_ErrorMessage(e));
      TRITONSERVER_ErrorDelete(e);
    }
  }
  IFD_INFO("unloaded backend '%s'", b->name);
  backend_free(b);
  pthread_mutex_unlock(&registry_mu);
}

/* ---- models ---------------------------------------------------------------
 */

static void model_obj_free(TRITONBACKEND_Model *bm) {
  uint32_t i;
  for (i = 0; i < bm->n_instances; i++) {
    TRITONBACKEND_ModelInstance *in = &bm->instances[i];
    free(in->name);
    if (in->host_policy != NULL) TRITONSERVER_MessageDelete(in->host_policy);
    free(in->job);
    free(in->reports);
    ifd__warmup_instance_free(in);
    if (in->init_err != NULL) TRITONSERVER_ErrorDelete(in->init_err);
    pthread_mutex_destroy(&in->mu);
    pthread_cond_destroy(&in->cv);
    pthread_cond_destroy(&in->q.cv);
  }
  free(bm->instances);
  ifd__bls_gate_unref(bm->gate);
  pthread_mutex_destroy(&bm->feed.mu);
  pthread_cond_destroy(&bm->feed.q.cv);
  free(bm);
}

/* The config's Kind enum orders GPU before CPU; TRITONSERVER's does not. */
static TRITONSERVER_InstanceGroupKind kind_of(
    Inference__ModelInstanceGroup__Kind k) {
  switch (k) {
    case INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_GPU:
      return TRITONSERVER_INSTANCEGROUPKIND_GPU;
    case INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_CPU:
      return TRITONSERVER_INSTANCEGROUPKIND_CPU;
    case INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_MODEL:
      return TRITONSERVER_INSTANCEGROUPKIND_MODEL;
    default:
      return TRITONSERVER_INSTANCEGROUPKIND_AUTO;
  }
}

/* Adds the CPUs of a list like "0-3,8" to `set`. 0, or -1 when malformed. */
static int cpu_list(const char *s, cpu_set_t *set) {
  while (*s != '\0') {
    char *end;
    long a = strtol(s, &end, 10), b = a;
    if (end == s || a < 0 || a >= CPU_SETSIZE) return -1;
    s = end;
    if (*s == '-') {
      b = strtol(s + 1, &end, 10);
      if (end == s + 1 || b < a || b >= CPU_SETSIZE) return -1;
      s = end;
    }
    for (; a <= b; a++) CPU_SET((int)a, set);
    if (*s == ',')
      s++;
    else if (*s == '\n' || *s == '\0')
      break;
    else
      return -1;
  }
  return 0;
}

/* The instance's host policy, as Triton's: its group's host_policy, else
 * "gpu_<device>" or "cpu". Fills in->host_policy with the policy's
 * --host-policy settings ({"<name>":{"<setting>":"<value>",...}}), for
 * cpu-cores (else numa-node: the node's CPUs, from sysfs) in->cpus, and for
 * numa-node in->numa_bind. 0, or an error naming the policy. */
static int host_policy(TRITONBACKEND_Model *bm, TRITONBACKEND_ModelInstance *in,
                       const char *group_policy, ifd_errmsg_t *err) {
  const ifd_server_opts_t *o = ifd_server_opts(bm->model->server);
  char name[64], *text;
  const char *numa = NULL, *cores = NULL;
  json_t *j = json_object(), *set = json_object();
  size_t k;
  int rc = 0;

  if (group_policy != NULL && group_policy[0] != '\0')
    snprintf(name, sizeof(name), "%s", group_policy);
  else if (in->kind == TRITONSERVER_INSTANCEGROUPKIND_GPU)
    snprintf(name, sizeof(name), "gpu_%d", (int)in->device_id);
  else
    snprintf(name, sizeof(name), "cpu");
  for (k = 0; k < o->n_host_policy; k++) {
    const ifd_backend_setting_t *t = &o->host_policy[k];
    if (strcmp(t->backend, name) != 0) continue;
    if (set != NULL)
      json_object_set_new(set, t->setting, json_string(t->value));
    if (strcmp(t->setting, "numa-node") == 0) numa = t->value;
    if (strcmp(t->setting, "cpu-cores") == 0) cores = t->value;
  }
  if (j == NULL || set == NULL || json_object_set(j, name, set) != 0 ||
      (text = json_dumps(j, JSON_COMPACT)) == NULL) {
    rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
    goto out;
  }
  in->host_policy = ifd__message_new_owned(text, strlen(text));
  if (in->host_policy == NULL) {
    free(text);
    rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
    goto out;
  }
  CPU_ZERO(&in->cpus);
  in->numa_bind = 0;
  if (cores != NULL) {
    if (cpu_list(cores, &in->cpus) != 0 || CPU_COUNT(&in->cpus) == 0) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "host policy '%s': invalid cpu-cores '%s' (expected a "
                    "list like 0-3,8)",
                    name, cores);
      goto out;
    }
    in->pin = 1;
  }
  if (numa != NULL) {
    char path[96], list[4096];
    cpu_set_t node_cpus;
    FILE *f;
    char *end;
    long node = strtol(numa, &end, 10);
    size_t n = 0;
    snprintf(path, sizeof(path), "/sys/devices/system/node/node%ld/cpulist",
             node);
    f = end != numa && *end == '\0' && node >= 0 && node < IFD_MAX_NUMA_NODES
            ? fopen(path, "r")
            : NULL;
    if (f != NULL) {
      n = fread(list, 1, sizeof(list) - 1, f);
      fclose(f);
    }
    list[n] = '\0';
    CPU_ZERO(&node_cpus);
    if (f == NULL || cpu_list(list, &node_cpus) != 0 ||
        CPU_COUNT(&node_cpus) == 0) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "host policy '%s': no NUMA node '%s' on this machine", name,
                    numa);
      goto out;
    }
    /* Memory on the node, as Triton; and, unless cpu-cores says where,
     * the node's CPUs too (numactl --cpunodebind --membind). */
    in->numa_bind = (int)node + 1;
    if (cores == NULL) {
      in->cpus = node_cpus;
      in->pin = 1;
    }
  }
out:
  json_decref(set);
  json_decref(j);
  return rc;
}

/* One instance per count of every instance group, named as Triton names
 * them: "<group>_<k>" for the k-th of a group. */
static int instances_plan(TRITONBACKEND_Model *bm, ifd_errmsg_t *err) {
  const ifd_model_config_t *c = bm->model->config;
  uint32_t total = 0, k = 0;
  size_t g;
  int j;

  for (g = 0; g < c->n_instance_group; g++) {
    const Inference__ModelInstanceGroup *ig = c->instance_group[g];
    uint32_t per = ig->count > 0 ? (uint32_t)ig->count : 1;
    if (ig->kind == INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_GPU &&
        ig->n_gpus > 0)
      per *= (uint32_t)ig->n_gpus;
    total += per;
  }
  if (total == 0) total = 1;
  bm->instances = calloc(total, sizeof(*bm->instances));
  if (bm->instances == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");

  for (g = 0; g < c->n_instance_group; g++) {
    const Inference__ModelInstanceGroup *ig = c->instance_group[g];
    int count = ig->count > 0 ? ig->count : 1;
    size_t ndev = ig->kind == INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_GPU &&
                          ig->n_gpus > 0
                      ? ig->n_gpus
                      : 1;
    size_t d;
    for (d = 0; d < ndev; d++)
      for (j = 0; j < count; j++) {
        TRITONBACKEND_ModelInstance *in = &bm->instances[k];
        in->model = bm;
        in->index = k++;
        in->kind = kind_of(ig->kind);
        in->device_id = ig->n_gpus > 0 ? ig->gpus[d] : 0;
        in->passive = ig->passive;
        in->rl_config = ig->rate_limiter;
        pthread_mutex_init(&in->mu, NULL);
        pthread_cond_init(&in->cv, NULL);
        pthread_cond_init(&in->q.cv, NULL);
        bm->n_instances = k;
        int rc;
        if (asprintf(&in->name, "%s_%d", ig->name, j) < 0) in->name = NULL;
        if (in->name == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
        rc = host_policy(bm, in, ig->host_policy, err);
        if (rc < 0) return rc;
      }
  }
  return 0;
}

/* --rate-limit=execution_count: registers every instance whose group's
 * rate_limiter names resources. A count --rate-limit-resource makes too
 * small fails the load with tritonserver's message, as its model load does
 * (what was registered is unregistered by limiter_leave). 0 or the error. */
static int limiter_join(TRITONBACKEND_Model *bm, ifd_errmsg_t *err) {
  uint32_t i;
  bm->rl = ifd_server_ratelimit(bm->model->server);
  if (bm->rl == NULL) return 0;
  for (i = 0; i < bm->n_instances; i++) {
    TRITONBACKEND_ModelInstance *in = &bm->instances[i];
    const Inference__ModelRateLimiter *c = in->rl_config;
    ifd_rl_need_t stack[8], *needs = stack;
    size_t k;
    int rc;
    if (c == NULL || c->n_resources == 0) continue;
    if (c->n_resources > 8) {
      needs = calloc(c->n_resources, sizeof(*needs));
      if (needs == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
    }
    for (k = 0; k < c->n_resources; k++) {
      needs[k].name = c->resources[k]->name;
      needs[k].global = c->resources[k]->global;
      needs[k].count = c->resources[k]->count;
    }
    /* CPU instances count as device 0, as tritonserver's. */
    rc = ifd_rl_register(
        bm->rl, needs, c->n_resources, c->priority,
        in->kind == TRITONSERVER_INSTANCEGROUPKIND_GPU ? (int)in->device_id : 0,
        &in->rl, err);
    if (needs != stack) free(needs);
    if (rc < 0) return rc;
  }
  return 0;
}

/* Unregisters the instances (their threads have stopped): what they held
 * goes back and the counts shrink to what the others need. */
static void limiter_leave(TRITONBACKEND_Model *bm) {
  uint32_t i;
  if (bm->rl == NULL) return;
  for (i = 0; i < bm->n_instances; i++) {
    ifd_rl_unregister(bm->rl, bm->instances[i].rl);
    bm->instances[i].rl = NULL;
  }
}

int ifd_backend_model_load(ifd_model_t *m, ifd_instance_idle_cb idle,
                           void *idle_arg, ifd_errmsg_t *err) {
  const ifd_server_opts_t *o = ifd_server_opts(m->server);
  const char *backend = ifd_config_backend_name(m->config);
  TRITONBACKEND_Model *bm;
  char path[PATH_MAX];
  int rc;

  if (backend == NULL || backend[0] == '\0')
    return ifd_errf(err, IFD_EINVAL,
                    "model '%s' names no backend (set 'backend' or 'platform')",
                    m->name);
  rc = find_library(m, backend, m->config->runtime, o->backend_dir, path,
                    sizeof(path), err);
  if (rc < 0) return rc;

  bm = calloc(1, sizeof(*bm));
  if (bm == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  bm->model = m;
  pthread_mutex_init(&bm->feed.mu, NULL);
  pthread_cond_init(&bm->feed.q.cv, NULL);
  bm->strict = o->strict_config;
  bm->idle = idle;
  bm->idle_arg = idle_arg;
  m->backend_model = bm;

  rc = ifd__backend_acquire(backend, path, o, &bm->backend, err);
  if (rc < 0) goto out_free;

  /* As Triton, before ModelInitialize: instance groups the config left to
   * the defaults follow the backend's preferences. */
  if (bm->backend->n_pref_groups > 0) {
    ifd_config_opts_t copts = {o->strict_config,
                               o->gpu_count,
                               o->model_config_name,
                               o->gpu_skip,
                               o->min_compute_capability,
                               0,
                               NULL};
    rc = ifd_config_prefer_groups(m->config, &copts, &m->group_defaults,
                                  bm->backend->pref_groups,
                                  bm->backend->n_pref_groups, err);
    if (rc < 0) goto out_release;
  }

  if (bm->backend->model_init != NULL) {
    TRITONSERVER_Error *e = bm->backend->model_init(bm);
    if (e != NULL) {
      rc = ifd__take_error(e, "TRITONBACKEND_ModelInitialize failed", err);
      goto out_release;
    }
  }
  /* The backend may have completed the config in ModelInitialize. A
   * decoupled model may send responses while an execute goes on: those are
   * never held back to coalesce wake-ups. */
  bm->coalesce = m->config->model_transaction_policy == NULL ||
                 !m->config->model_transaction_policy->decoupled;
  /* The sequence batcher forms each batch for one instance. */
  bm->targeted = ifd_config_sequence(m->config) != NULL;
  rc = instances_plan(bm, err);
  if (rc < 0) goto out_model_fini;
  bm->gate = ifd__bls_gate_new(bm->n_instances);
  if (bm->gate == NULL) {
    rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
    goto out_model_fini;
  }
  rc = limiter_join(bm, err);
  if (rc < 0) goto out_model_fini;
  rc = ifd__instances_start(bm, err);
  if (rc < 0) goto out_model_fini;
  return 0;

out_model_fini:
  ifd__instances_stop(bm);
  limiter_leave(bm);
  if (bm->backend->model_fini != NULL) {
    TRITONSERVER_Error *e = bm->backend->model_fini(bm);
    if (e != NULL) TRITONSERVER_ErrorDelete(e);
  }
out_release:
  ifd__backend_release(bm->backend);
out_free:
  model_obj_free(bm);
  m->backend_model = NULL;
  return rc;
}

static void on_model_freed(ifd_event_t *ev) {
  TRITONBACKEND_Model *bm =
      (TRITONBACKEND_Model *)((char *)ev -
                              offsetof(TRITONBACKEND_Model, free_ev));
  void (*freed)(void *) = bm->freed;
  void *arg = bm->freed_arg;
  uint32_t i;
  for (i = 0; i < bm->n_instances; i++)
    ifd__instance_flush_reports(&bm->instances[i]);
  bm->model->backend_model = NULL;
  model_obj_free(bm);
  if (freed != NULL) freed(arg);
}

void ifd_backend_model_unload(ifd_model_t *m, void (*freed)(void *arg),
                              void *arg) {
  TRITONBACKEND_Model *bm = m->backend_model;
  if (bm == NULL) {
    if (freed != NULL) freed(arg);
    return;
  }
  atomic_store_explicit(&bm->unloading, 1, memory_order_release);
  ifd__instances_stop(bm);
  limiter_leave(bm);
  if (bm->backend->model_fini != NULL) {
    TRITONSERVER_Error *e = bm->backend->model_fini(bm);
    if (e != NULL) {
      IFD_ERROR("TRITONBACKEND_ModelFinalize of '%s' failed: %s", m->name,
                TRITONSERVER_ErrorMessage(e));
      TRITONSERVER_ErrorDelete(e);
    }
  }
  ifd__backend_release(bm->backend);
  bm->backend = NULL;
  /* Idle events of the stopped instances may still be queued: free on the
   * loop, after them (the queue is FIFO). */
  bm->freed = freed;
  bm->freed_arg = arg;
  bm->free_ev.fn = on_model_freed;
  ifd_evq_push(ifd_server_evq(m->server), &bm->free_ev);
}

uint32_t ifd_backend_instance_count(const ifd_model_t *m) {
  const TRITONBACKEND_Model *bm = m->backend_model;
  return bm != NULL ? bm->n_instances : 0;
}

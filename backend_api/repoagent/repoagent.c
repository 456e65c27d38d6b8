/*
 * backend_api/repoagent/repoagent.c - repository agents: Triton's
 * TRITONREPOAGENT_* API. The libraries
 * (<repoagent-directory>/<name>/libtritonrepoagent_<name> .so), the agent
 * models of each load, their life (LOAD, LOAD_COMPLETE | LOAD_FAIL, UNLOAD,
 * UNLOAD_COMPLETE) and the functions agents call.
 *
 * The registry (core/registry.c) drives it through ifd_repoagent_ops(), the
 * table core/repoagent.h describes, always from the thread pool. Agent
 * libraries are shared by every model that names them: opened and
 * initialized by the first load that needs one, finalized and closed when
 * the last agent model using it ends (as Triton does). The list of open
 * agents is the process's, guarded by one mutex held only to find or add.
 */
#include "backend_api/internal.h"

#define _COMPILING_TRITONREPOAGENT 1
#include "triton/core/tritonrepoagent.h"

#include <dlfcn.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_api/backend_api.h"
#include "base/log.h"
#include "core/repo.h"
#include "core/repoagent.h"

typedef TRITONSERVER_Error *(*agent_fn)(TRITONREPOAGENT_Agent *);
typedef TRITONSERVER_Error *(*model_fn)(TRITONREPOAGENT_Agent *,
                                        TRITONREPOAGENT_AgentModel *);
typedef TRITONSERVER_Error *(*action_fn)(TRITONREPOAGENT_Agent *,
                                         TRITONREPOAGENT_AgentModel *,
                                         const TRITONREPOAGENT_ActionType);

struct TRITONREPOAGENT_Agent {
  TRITONREPOAGENT_Agent *next; /* guarded by agents_mu */
  int refs;                    /* guarded by agents_mu: agent models */
  char *name;                  /* owned */
  char *libpath;               /* owned */
  void *dl;                    /* owned: dlopen handle */
  agent_fn init, fini;         /* optional entry points */
  model_fn model_init, model_fini;
  action_fn action; /* required */
  void *state;      /* the agent's: TRITONREPOAGENT_SetState */
};

struct TRITONREPOAGENT_AgentModel {
  TRITONREPOAGENT_Agent *agent; /* counted: agent->refs */
  TRITONREPOAGENT_ArtifactType type;
  char *location; /* owned: what ModelRepositoryLocation answers */
  char *acquired; /* owned: ModelRepositoryLocationAcquire's folder */
  char **keys;    /* owned array of owned strings: parameter names */
  char **vals;    /* owned, same: parameter values */
  uint32_t n_params;
  char *config; /* owned: the config as JSON, or NULL */
  void *state;  /* the agent's: TRITONREPOAGENT_ModelSetState */
  int action_set;
  TRITONREPOAGENT_ActionType action; /* the last one told */
};

/* The agent models of one load of one model, in the config's order. */
typedef struct chain {
  pthread_mutex_t mu; /* serializes the actions (versions unload at once) */
  TRITONREPOAGENT_AgentModel **models; /* owned array, owned models */
  size_t n;
} chain_t;

static pthread_mutex_t agents_mu = PTHREAD_MUTEX_INITIALIZER;
static TRITONREPOAGENT_Agent *agents; /* guarded by agents_mu */

static const char *action_name(TRITONREPOAGENT_ActionType a) {
  switch (a) {
    case TRITONREPOAGENT_ACTION_LOAD:
      return "TRITONREPOAGENT_ACTION_LOAD";
    case TRITONREPOAGENT_ACTION_LOAD_COMPLETE:
      return "TRITONREPOAGENT_ACTION_LOAD_COMPLETE";
    case TRITONREPOAGENT_ACTION_LOAD_FAIL:
      return "TRITONREPOAGENT_ACTION_LOAD_FAIL";
    case TRITONREPOAGENT_ACTION_UNLOAD:
      return "TRITONREPOAGENT_ACTION_UNLOAD";
    case TRITONREPOAGENT_ACTION_UNLOAD_COMPLETE:
      return "TRITONREPOAGENT_ACTION_UNLOAD_COMPLETE";
  }
  return "Unknown TRITONREPOAGENT_ActionType";
}

/* IFD_E* code of a TRITONSERVER_Error's class. */
static int code_of(TRITONSERVER_Error *e) {
  switch (TRITONSERVER_ErrorCode(e)) {
    case TRITONSERVER_ERROR_NOT_FOUND:
      return IFD_ENOTFOUND;
    case TRITONSERVER_ERROR_INVALID_ARG:
      return IFD_EINVAL;
    case TRITONSERVER_ERROR_UNAVAILABLE:
      return IFD_EUNAVAIL;
    case TRITONSERVER_ERROR_UNSUPPORTED:
      return IFD_EUNSUPPORTED;
    case TRITONSERVER_ERROR_ALREADY_EXISTS:
      return IFD_EEXISTS;
    case TRITONSERVER_ERROR_UNKNOWN:
      return IFD_EUNKNOWN;
    default:
      return IFD_EINTERNAL;
  }
}

/* Moves an agent's error into `err` (the agent's message, as Triton
 * answers it) and frees it. */
static int take_error(TRITONSERVER_Error *e, ifd_errmsg_t *err) {
  int rc = ifd_errf(err, code_of(e), "%s", TRITONSERVER_ErrorMessage(e));
  TRITONSERVER_ErrorDelete(e);
  return rc;
}

/* Logs an error an agent returned where nothing can fail any more. */
static void log_error(TRITONSERVER_Error *e, const char *what) {
  if (e == NULL) return;
  IFD_ERROR("%s: %s", what, TRITONSERVER_ErrorMessage(e));
  TRITONSERVER_ErrorDelete(e);
}

/* ---- agent libraries ------------------------------------------------------
 */

static void agent_close(TRITONREPOAGENT_Agent *a) {
  if (a->fini != NULL) log_error(a->fini(a), "TRITONREPOAGENT_Finalize");
  dlclose(a->dl);
  IFD_INFO("repository agent '%s' unloaded", a->name);
  free(a->name);
  free(a->libpath);
  free(a);
}

/* Drops an agent model's reference; the last one closes the agent. */
static void agent_unref(TRITONREPOAGENT_Agent *a) {
  TRITONREPOAGENT_Agent **pp;
  pthread_mutex_lock(&agents_mu);
  if (--a->refs > 0) {
    pthread_mutex_unlock(&agents_mu);
    return;
  }
  for (pp = &agents; *pp != a; pp = &(*pp)->next)
    ;
  *pp = a->next;
  pthread_mutex_unlock(&agents_mu);
  agent_close(a);
}

/* Opens, or finds open, agent `name` with one more reference. The mutex is
 * held across dlopen and Initialize so that an agent opens once. */
static int agent_get(const char *dir, const char *name,
                     TRITONREPOAGENT_Agent **out, ifd_errmsg_t *err) {
  char libname[512], path[4096];
  TRITONREPOAGENT_Agent *a;
  TRITONSERVER_Error *e;
  int rc;

  if (dir == NULL || dir[0] == '\0') dir = IFD_REPOAGENT_DIR_DEFAULT;
  snprintf(libname, sizeof(libname), "libtritonrepoagent_%s.so", name);
  if (name[0] == '\0' || strchr(name, '/') != NULL ||
      (size_t)snprintf(path, sizeof(path), "%s/%s/%s", dir, name, libname) >=
          sizeof(path) ||
      access(path, F_OK) != 0)
    return ifd_errf(err, IFD_EINVAL,
                    "unable to find '%s' for repo agent '%s', searched: %s",
                    libname, name, dir);
  pthread_mutex_lock(&agents_mu);
  for (a = agents; a != NULL; a = a->next)
    if (strcmp(a->libpath, path) == 0) {
      a->refs++;
      pthread_mutex_unlock(&agents_mu);
      *out = a;
      return 0;
    }
  a = calloc(1, sizeof(*a));
  if (a == NULL || (a->name = strdup(name)) == NULL ||
      (a->libpath = strdup(path)) == NULL) {
    rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
    goto out_free;
  }
  a->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (a->dl == NULL) {
    rc = ifd_errf(err, IFD_EINVAL, "unable to load repository agent '%s': %s",
                  path, dlerror());
    goto out_free;
  }
  *(void **)&a->init = dlsym(a->dl, "TRITONREPOAGENT_Initialize");
  *(void **)&a->fini = dlsym(a->dl, "TRITONREPOAGENT_Finalize");
  *(void **)&a->model_init = dlsym(a->dl, "TRITONREPOAGENT_ModelInitialize");
  *(void **)&a->model_fini = dlsym(a->dl, "TRITONREPOAGENT_ModelFinalize");
  *(void **)&a->action = dlsym(a->dl, "TRITONREPOAGENT_ModelAction");
  if (a->action == NULL) {
    rc = ifd_errf(err, IFD_EINVAL,
                  "unable to find required entrypoint "
                  "'TRITONREPOAGENT_ModelAction' in shared library '%s'",
                  path);
    goto out_close;
  }
  if (a->init != NULL && (e = a->init(a)) != NULL) {
    rc = take_error(e, err);
    goto out_close;
  }
  a->refs = 1;
  a->next = agents;
  agents = a;
  pthread_mutex_unlock(&agents_mu);
  IFD_INFO("repository agent '%s' loaded from %s", name, path);
  *out = a;
  return 0;

out_close:
  dlclose(a->dl);
out_free:
  pthread_mutex_unlock(&agents_mu);
  if (a != NULL) {
    free(a->name);
    free(a->libpath);
    free(a);
  }
  return rc;
}

/* ---- agent models ----------------------------------------------------------
 */

static void model_free(TRITONREPOAGENT_AgentModel *m) {
  for (uint32_t i = 0; i < m->n_params; i++) {
    free(m->keys[i]);
    free(m->vals[i]);
  }
  free(m->keys);
  free(m->vals);
  free(m->location);
  free(m->config);
  if (m->acquired != NULL) {
    ifd_repo_agent_temp_remove(m->acquired);
    free(m->acquired);
  }
  free(m);
}

/* Tells `m` one action, checking the life order as Triton does. */
static int invoke(TRITONREPOAGENT_AgentModel *m, TRITONREPOAGENT_ActionType a,
                  ifd_errmsg_t *err) {
  TRITONREPOAGENT_ActionType want;
  TRITONSERVER_Error *e;
  int legal;
  switch (a) {
    case TRITONREPOAGENT_ACTION_LOAD:
      legal = !m->action_set;
      break;
    case TRITONREPOAGENT_ACTION_LOAD_COMPLETE:
    case TRITONREPOAGENT_ACTION_LOAD_FAIL:
      want = TRITONREPOAGENT_ACTION_LOAD;
      legal = m->action_set && m->action == want;
      break;
    case TRITONREPOAGENT_ACTION_UNLOAD:
      want = TRITONREPOAGENT_ACTION_LOAD_COMPLETE;
      legal = m->action_set && m->action == want;
      break;
    default:
      want = TRITONREPOAGENT_ACTION_UNLOAD;
      legal = m->action_set && m->action == want;
      break;
  }
  if (!legal)
    return ifd_errf(err, IFD_EINTERNAL,
                    "Unexpected lifecycle state transition from %s to %s",
                    m->action_set ? action_name(m->action) : "not set",
                    action_name(a));
  m->action = a;
  m->action_set = 1;
  e = m->agent->action(m->agent, m, a);
  return e != NULL ? take_error(e, err) : 0;
}

/* Ends an agent model as Triton's destructor does: what its life still
 * owes it, ModelFinalize, its folder, its agent reference. */
static void model_end(TRITONREPOAGENT_AgentModel *m) {
  ifd_errmsg_t err;
  TRITONREPOAGENT_Agent *a = m->agent;
  ifd_errclear(&err);
  if (m->action_set) {
    switch (m->action) {
      case TRITONREPOAGENT_ACTION_LOAD:
        if (invoke(m, TRITONREPOAGENT_ACTION_LOAD_FAIL, &err) < 0)
          IFD_ERROR("Inform TRITONREPOAGENT_ACTION_LOAD_FAIL: %s", err.text);
        break;
      case TRITONREPOAGENT_ACTION_LOAD_COMPLETE:
        if (invoke(m, TRITONREPOAGENT_ACTION_UNLOAD, &err) < 0)
          IFD_ERROR("Inform TRITONREPOAGENT_ACTION_UNLOAD: %s", err.text);
        /* fall through */
      case TRITONREPOAGENT_ACTION_UNLOAD:
        if (invoke(m, TRITONREPOAGENT_ACTION_UNLOAD_COMPLETE, &err) < 0)
          IFD_ERROR("Inform TRITONREPOAGENT_ACTION_UNLOAD_COMPLETE: %s",
                    err.text);
        break;
      default:
        break;
    }
  }
  if (a->model_fini != NULL)
    log_error(a->model_fini(a, m), "TRITONREPOAGENT_ModelFinalize");
  model_free(m);
  agent_unref(a);
}

/* The config at `location` as JSON for the agent: `cfg` for the model's
 * own folder, else what config.pbtxt there says (NULL if unreadable). */
static char *config_json(const ifd_model_config_t *cfg, const char *name,
                         const ifd_config_opts_t *copts, const char *location) {
  ifd_model_config_t *read = NULL;
  ifd_errmsg_t err;
  json_t *j;
  char *text;
  if (cfg == NULL) {
    ifd_errclear(&err);
    if (ifd_config_load(location, name, copts, &read, &err) < 0) return NULL;
    cfg = read;
  }
  j = ifd_config_to_json(cfg);
  text = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  ifd_config_free(read);
  return text;
}

/* A new agent model for agent entry `ac` of a config, at `location`. */
static int model_new(const char *dir,
                     const Inference__ModelRepositoryAgents__Agent *ac,
                     const char *location, char *config,
                     TRITONREPOAGENT_AgentModel **out, ifd_errmsg_t *err) {
  TRITONREPOAGENT_AgentModel *m = calloc(1, sizeof(*m));
  TRITONSERVER_Error *e;
  int rc;

  if (m == NULL) {
    free(config);
    return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  m->config = config;
  m->type = TRITONREPOAGENT_ARTIFACT_FILESYSTEM;
  m->location = strdup(location);
  m->keys = calloc(ac->n_parameters + 1, sizeof(char *));
  m->vals = calloc(ac->n_parameters + 1, sizeof(char *));
  if (m->location == NULL || m->keys == NULL || m->vals == NULL) {
    rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
    goto out_free;
  }
  for (size_t i = 0; i < ac->n_parameters; i++) {
    m->keys[i] = strdup(ac->parameters[i]->key);
    m->vals[i] = strdup(ac->parameters[i]->value);
    m->n_params++;
    if (m->keys[i] == NULL || m->vals[i] == NULL) {
      rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
      goto out_free;
    }
  }
  rc = agent_get(dir, ac->name, &m->agent, err);
  if (rc < 0) goto out_free;
  if (m->agent->model_init != NULL &&
      (e = m->agent->model_init(m->agent, m)) != NULL) {
    TRITONREPOAGENT_Agent *a = m->agent;
    rc = take_error(e, err);
    model_free(m);
    agent_unref(a);
    return rc;
  }
  *out = m;
  return 0;

out_free:
  model_free(m);
  return rc;
}

/* ---- the chain (core/repoagent.h) -----------------------------------------
 */

static void chain_release(void *arg) {
  chain_t *c = arg;
  for (size_t i = 0; i < c->n; i++) model_end(c->models[i]);
  free(c->models);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

static int chain_load(const char *dir, const char *name,
                      const ifd_model_config_t *cfg,
                      const ifd_config_opts_t *copts, const char *location,
                      void **out, const char **final_location,
                      ifd_errmsg_t *err) {
  const Inference__ModelRepositoryAgents *ra = cfg->model_repository_agents;
  chain_t *c = calloc(1, sizeof(*c));
  const char *at = location;
  int rc = 0;

  if (c == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  pthread_mutex_init(&c->mu, NULL);
  c->models = calloc(ra->n_agents ? ra->n_agents : 1, sizeof(*c->models));
  if (c->models == NULL) {
    chain_release(c);
    return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < ra->n_agents; i++) {
    TRITONREPOAGENT_AgentModel *m = NULL;
    char *config = config_json(i == 0 ? cfg : NULL, name, copts, at);
    rc = model_new(dir, ra->agents[i], at, config, &m, err);
    if (rc < 0) break;
    c->models[c->n++] = m;
    rc = invoke(m, TRITONREPOAGENT_ACTION_LOAD, err);
    if (rc < 0) break;
    at = m->location;
  }
  if (rc < 0) {
    /* Every agent told LOAD hears LOAD_FAIL, the failing one too. */
    chain_release(c);
    return rc;
  }
  *out = c;
  *final_location = at;
  return 0;
}

static void chain_loaded(void *arg, int ok) {
  chain_t *c = arg;
  ifd_errmsg_t err;
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < c->n; i++) {
    ifd_errclear(&err);
    if (invoke(c->models[i],
               ok ? TRITONREPOAGENT_ACTION_LOAD_COMPLETE
                  : TRITONREPOAGENT_ACTION_LOAD_FAIL,
               &err) < 0)
      IFD_ERROR("repository agent '%s': %s", c->models[i]->agent->name,
                err.text);
  }
  pthread_mutex_unlock(&c->mu);
}

static void chain_unloading(void *arg) {
  chain_t *c = arg;
  ifd_errmsg_t err;
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < c->n; i++) {
    TRITONREPOAGENT_AgentModel *m = c->models[i];
    if (m->action != TRITONREPOAGENT_ACTION_LOAD_COMPLETE) continue;
    ifd_errclear(&err);
    if (invoke(m, TRITONREPOAGENT_ACTION_UNLOAD, &err) < 0)
      IFD_ERROR("repository agent '%s': %s", m->agent->name, err.text);
  }
  pthread_mutex_unlock(&c->mu);
}

static const ifd_repoagent_ops_t ops = {chain_load, chain_loaded,
                                        chain_unloading, chain_release};

const ifd_repoagent_ops_t *ifd_repoagent_ops(void) {
  return &ops;
}

/* ---- TRITONREPOAGENT_* -----------------------------------------------------
 */

TRITONSERVER_Error *TRITONREPOAGENT_ApiVersion(uint32_t *major,
                                               uint32_t *minor) {
  ARG_CHECK(major != NULL && minor != NULL);
  *major = TRITONREPOAGENT_API_VERSION_MAJOR;
  *minor = TRITONREPOAGENT_API_VERSION_MINOR;
  return NULL;
}

TRITONSERVER_Error *TRITONREPOAGENT_ModelRepositoryLocation(
    TRITONREPOAGENT_Agent *agent, TRITONREPOAGENT_AgentModel *model,
    TRITONREPOAGENT_ArtifactType *artifact_type, const char **location) {
  (void)agent;
  ARG_CHECK(model != NULL && artifact_type != NULL && location != NULL);
  if (model->location == NULL || model->location[0] == '\0')
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "Model repository location is not set");
  *artifact_type = model->type;
  *location = model->location;
  return NULL;
}

TRITONSERVER_Error *TRITONREPOAGENT_ModelRepositoryLocationAcquire(
    TRITONREPOAGENT_Agent *agent, TRITONREPOAGENT_AgentModel *model,
    const TRITONREPOAGENT_ArtifactType artifact_type, const char **location) {
  ifd_errmsg_t err;
  (void)agent;
  ARG_CHECK(model != NULL && location != NULL);
  if (artifact_type != TRITONREPOAGENT_ARTIFACT_FILESYSTEM)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "Unexpected artifact type, expects "
                                 "'TRITONREPOAGENT_ARTIFACT_FILESYSTEM'");
  ifd_errclear(&err);
  if (model->acquired == NULL &&
      ifd_repo_agent_temp(&model->acquired, &err) < 0)
    return ifd__error_from(err.code, err.text);
  *location = model->acquired;
  return NULL;
}

TRITONSERVER_Error *TRITONREPOAGENT_ModelRepositoryLocationRelease(
    TRITONREPOAGENT_Agent *agent, TRITONREPOAGENT_AgentModel *model,
    const char *location) {
  (void)agent;
  (void)location;
  ARG_CHECK(model != NULL);
  if (model->acquired == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE,
                                 "No mutable location to be deleted");
  ifd_repo_agent_temp_remove(model->acquired);
  free(model->acquired);
  model->acquired = NULL;
  return NULL;
}

TRITONSERVER_Error *TRITONREPOAGENT_ModelRepositoryUpdate(
    TRITONREPOAGENT_Agent *agent, TRITONREPOAGENT_AgentModel *model,
    const TRITONREPOAGENT_ArtifactType artifact_type, const char *location) {
  char *copy;
  (void)agent;
  ARG_CHECK(model != NULL && location != NULL);
  if (!model->action_set || model->action != TRITONREPOAGENT_ACTION_LOAD)
    return ifd__errorf(
        TRITONSERVER_ERROR_INVALID_ARG,
        "location can only be updated during "
        "TRITONREPOAGENT_ACTION_LOAD, current action type is %s",
        model->action_set ? action_name(model->action) : "not set");
  if (artifact_type != TRITONREPOAGENT_ARTIFACT_FILESYSTEM)
    return TRITONSERVER_ErrorNew(
        TRITONSERVER_ERROR_UNSUPPORTED,
        "inferd loads models from the local file system only "
        "(TRITONREPOAGENT_ARTIFACT_FILESYSTEM)");
  copy = strdup(location);
  if (copy == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  free(model->location);
  model->location = copy;
  model->type = artifact_type;
  return NULL;
}

TRITONSERVER_Error *TRITONREPOAGENT_ModelParameterCount(
    TRITONREPOAGENT_Agent *agent, TRITONREPOAGENT_AgentModel *model,
    uint32_t *count) {
  (void)agent;
  ARG_CHECK(model != NULL && count != NULL);
  *count = model->n_params;
  return NULL;
}

TRITONSERVER_Error *TRITONREPOAGENT_ModelParameter(
    TRITONREPOAGENT_Agent *agent, TRITONREPOAGENT_AgentModel *model,
    const uint32_t index, const char **parameter_name,
    const char **parameter_value) {
  (void)agent;
  ARG_CHECK(model != NULL && parameter_name != NULL && parameter_value != NULL);
  if (index >= model->n_params)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "index out of range for model parameters");
  *parameter_name = model->keys[index];
  *parameter_value = model->vals[index];
  return NULL;
}

TRITONSERVER_Error *TRITONREPOAGENT_ModelConfig(
    TRITONREPOAGENT_Agent *agent, TRITONREPOAGENT_AgentModel *model,
    const uint32_t config_version, TRITONSERVER_Message **model_config) {
  (void)agent;
  ARG_CHECK(model != NULL && model_config != NULL);
  if (config_version != 1)
    return ifd__errorf(TRITONSERVER_ERROR_UNSUPPORTED,
                       "model configuration version %u not supported, "
                       "supported versions are: 1",
                       config_version);
  *model_config = NULL;
  if (model->config == NULL) return NULL;
  return TRITONSERVER_MessageNewFromSerializedJson(model_config, model->config,
                                                   strlen(model->config));
}

TRITONSERVER_Error *TRITONREPOAGENT_ModelState(
    TRITONREPOAGENT_AgentModel *model, void **state) {
  ARG_CHECK(model != NULL && state != NULL);
  *state = model->state;
  return NULL;
}

TRITONSERVER_Error *TRITONREPOAGENT_ModelSetState(
    TRITONREPOAGENT_AgentModel *model, void *state) {
  ARG_CHECK(model != NULL);
  model->state = state;
  return NULL;
}

TRITONSERVER_Error *TRITONREPOAGENT_State(TRITONREPOAGENT_Agent *agent,
                                          void **state) {
  ARG_CHECK(agent != NULL && state != NULL);
  *state = agent->state;
  return NULL;
}

TRITONSERVER_Error *TRITONREPOAGENT_SetState(TRITONREPOAGENT_Agent *agent,
                                             void *state) {
  ARG_CHECK(agent != NULL);
  agent->state = state;
  return NULL;
}

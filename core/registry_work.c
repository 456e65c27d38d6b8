/*
 * core/registry_work.c - the registry's thread-pool side: the work function
 * of each job an operation queues (find a model's folder, write override
 * files, read and validate its config, run its repository agents, pick its
 * versions; load and unload a version through the model operations; remove
 * a temporary folder). Each runs on a pool thread, touches only its job
 * and what its operation handed it, and reports back through the job's
 * after-work callback in core/registry.c, on the loop.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "base/log.h"
#include "core/model.h"
#include "core/registry_internal.h"

void ifd__reg_rm_work(uv_work_t *w) {
  reg_job_t *j = (reg_job_t *)w;
  ifd_repo_remove_temp(j->path);
}

void ifd__reg_agents_end_work(uv_work_t *w) {
  reg_job_t *j = (reg_job_t *)w;
  j->server->rt.opts.repoagent_ops->release(j->agents);
}

void ifd__reg_unload_work(uv_work_t *w) {
  reg_job_t *j = (reg_job_t *)w;
  ifd__reg_agents_unload(j->server, j->model);
}

void ifd__reg_prepare_work(uv_work_t *w) {
  reg_job_t *j = (reg_job_t *)w;
  reg_op_t *op = j->op;
  ifd_server_t *s = j->server;
  ifd_config_opts_t copts = {s->rt.opts.strict_config,
                             s->rt.opts.gpu_count,
                             s->rt.opts.model_config_name,
                             s->rt.opts.gpu_skip,
                             s->rt.opts.min_compute_capability,
                             j->mapped,
                             &op->group_defaults};
  const char *dir;
  char *tmp = NULL;

  ifd_errclear(&j->err);
  if (j->path == NULL) {
    j->rc = ifd_repo_find((const char *const *)j->repos, j->n_repos, j->name,
                          &j->path, &j->repo, &j->err);
    if (j->rc < 0) return;
  }
  dir = j->path;
  if (op->n_files > 0) {
    if (op->config == NULL) {
      j->rc = ifd_errf(&j->err, IFD_EINVAL,
                       "failed to load '%s': the 'config' parameter must be "
                       "given with the 'file:' parameters",
                       j->name);
      return;
    }
    j->rc = ifd_repo_write_temp(j->name, op->files, op->n_files, &tmp, &j->err);
    if (j->rc < 0) return;
    dir = tmp;
  }
  if (op->config != NULL)
    j->rc = ifd_config_prepare_json(op->config, op->config_len, dir, j->name,
                                    &copts, &op->cfg, &j->err);
  else
    j->rc = ifd_config_prepare(dir, j->name, &copts, &op->cfg, &j->err);
  op->fp = ifd_repo_fingerprint(j->path);
  if (j->rc == 0 && op->cfg->model_repository_agents != NULL &&
      op->cfg->model_repository_agents->n_agents > 0 &&
      (j->same_fp == 0 || op->fp != j->same_fp)) {
    /* As Triton: the agents run before the versions are read, and the
     * model loads from where the last one left its files. */
    if (s->rt.opts.repoagent_ops == NULL)
      j->rc = ifd_errf(&j->err, IFD_EUNSUPPORTED,
                       "repository agents are not available");
    else
      j->rc = s->rt.opts.repoagent_ops->load(s->rt.opts.repoagent_dir, j->name,
                                             op->cfg, &copts, dir, &op->agents,
                                             &op->agent_loc, &j->err);
    if (j->rc == 0) dir = op->agent_loc;
  }
  if (j->rc == 0)
    j->rc = ifd_repo_versions(dir, op->cfg, &op->versions, &op->n_versions,
                              &j->err);
  if (j->rc < 0 && op->agents != NULL) {
    s->rt.opts.repoagent_ops->release(op->agents);
    op->agents = NULL;
    op->agent_loc = NULL;
  }
  if (tmp != NULL) {
    if (j->rc < 0) {
      ifd_repo_remove_temp(tmp);
      free(tmp);
    } else {
      /* The versions load from the temporary folder. */
      free(j->path);
      j->path = tmp;
    }
  }
}

void ifd__reg_load_work(uv_work_t *w) {
  reg_job_t *j = (reg_job_t *)w;
  unsigned retries = j->server->rt.opts.model_load_retry_count, k;
  /* The outputs' label files first: one that cannot be read fails the load
   * (as in Triton, whose model reads them when it is created). */
  ifd_errclear(&j->err);
  j->rc = ifd__model_load_labels(j->model, &j->err);
  if (j->rc != 0) return;
  /* --model-load-retry-count: a failed load leaves nothing behind (the
   * scheduler and the backend undo what they made), so it starts over. */
  for (k = 0;; k++) {
    ifd_errclear(&j->err);
    j->rc = j->server->rt.opts.ops->load(j->model, &j->err);
    if (j->rc == 0 || k == retries) break;
    IFD_WARN("failed to load '%s' version %" PRId64 ": %s; retrying (%u of %u)",
             j->model->name, j->model->version,
             j->err.text[0] ? j->err.text : ifd_strerror(j->rc), k + 1,
             retries);
  }
}

void ifd__reg_agents_loaded_work(uv_work_t *w) {
  reg_job_t *j = (reg_job_t *)w;
  j->ma->ops->loaded(j->ma->chain, j->agents_ok);
  ifd__reg_agents_unref(j->ma);
}

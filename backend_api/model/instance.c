/*
 * backend_api/model/instance.c - one thread per model instance, and the model's
 * run queue they share.
 *
 * Each instance thread runs TRITONBACKEND_ModelInstanceInitialize on itself
 * (so thread-bound resources such as a CUDA stream live there), then takes
 * batches from its model's run queue, runs TRITONBACKEND_ModelInstanceExecute
 * on each, and reports finished work to the loop. Stopping lets the current
 * execute finish, then finalizes the instance on its thread.
 *
 * Wake-ups are the cost to watch: with the loop and an instance on one core,
 * every hand-off is a context switch. So the loop signals an instance only
 * when one sleeps, and an instance working through a backlog of cheap jobs
 * may leave its wake-ups of the loop owed (ifd_evq_defer_*), decided after
 * each job on what it cost. The debt belongs to the completion queue: any
 * other producer pays it, and so does the loop when it wakes for anything
 * else or, while anyone defers, on a fallback timer (base/event.h). Jobs that
 * take longer than COALESCE_NS / 2 and decoupled models (whose responses may
 * trickle out of one execute) never defer.
 *
 * The other way round, waking an instance of a model whose recent executes
 * were cheap, the loop says it expects the results soon (ifd_evq_expect):
 * it then waits for them briefly instead of sleeping, and the instance need
 * not signal it. Decoupled models are not expected.
 *
 * With --rate-limit=execution_count, an instance whose group names
 * resources (in->rl) asks the limiter (core/ratelimit.h) for them once it
 * sees work queued, before it takes a batch: the batch stays queued, where
 * any instance of the model that gets its resources first may take it.
 * An instance that must wait wakes one sleeping sibling first (it may need
 * other resources, on another device, that are free); the one that takes
 * the last queued batch withdraws the siblings still waiting. Resources
 * are given back as soon as the execute returns. Instances without
 * resources, and every instance when the limiter is off, take the path
 * above unchanged but for two pointer tests (in->rl, and the model's
 * limiter once the queue is empty).
 *
 * Tests run instances inline (ifd__instances_inline, ifd__instance_step):
 * no thread, the caller takes and runs each batch (without the limiter).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backend_api/internal.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/util.h"
#include "core/server.h"
#include "cuda/gpu.h"

/* How long finished work may wait for the loop to hear of it. */
#define COALESCE_NS 50000u

/* What a hand-off costs beyond the execute (waking the instance, taking the
 * job, reporting it), for the loop's wait for a cheap model's results. */
#define EXPECT_SLACK_NS 10000u

static void on_idle(ifd_event_t *ev) {
  TRITONBACKEND_ModelInstance *in =
      ifd_container_of(ev, TRITONBACKEND_ModelInstance, idle_ev);
  TRITONBACKEND_Model *bm = in->model;
  uint64_t jobs, reqs;
  /* Re-arm first: work finished from here on queues a new event. */
  atomic_store(&in->idle_queued, 0);
  jobs = atomic_exchange(&in->done_jobs, 0);
  reqs = atomic_exchange(&in->done_reqs, 0);
  ifd__instance_flush_reports(in);
  /* jobs and reqs are two counters: an instance may have added a job's
   * requests after the exchanges above took its job count, so a report can
   * carry requests alone. Dropping it would leave them "executing" for ever
   * (and a shutdown waiting on them). */
  if (!atomic_load_explicit(&bm->unloading, memory_order_acquire) &&
      bm->idle != NULL && (jobs > 0 || reqs > 0))
    bm->idle(bm->model, in->index, jobs, reqs, bm->idle_arg);
}

/* An execute that returns an error leaves its requests to the server, as
 * Triton's contract says: each gets an error response and is released. */
static void fail_batch(ifd_request_t **reqs, uint32_t n,
                       TRITONSERVER_Error *e) {
  const char *msg = TRITONSERVER_ErrorMessage(e);
  int code = ifd__code_from_class(TRITONSERVER_ErrorCode(e));
  uint32_t i;
  for (i = 0; i < n; i++) {
    ifd_response_t *resp = ifd_response_new(reqs[i]);
    if (resp != NULL) ifd_response_send(resp, IFD_RESPONSE_FINAL, code, msg);
    ifd_request_release(reqs[i], TRITONSERVER_REQUEST_RELEASE_ALL);
  }
  TRITONSERVER_ErrorDelete(e);
}

/* The batch this thread is executing (for ifd__instance_request_of). */
static _Thread_local ifd_request_t **cur_reqs;
static _Thread_local uint32_t cur_n;
static _Thread_local TRITONBACKEND_ModelInstance *cur_in;

TRITONBACKEND_ModelInstance *ifd__instance_current(ifd_request_t ***reqs,
                                                   uint32_t *n) {
  if (reqs != NULL) *reqs = cur_reqs;
  if (n != NULL) *n = cur_n;
  return cur_in;
}

ifd_request_t *ifd__instance_request_of(const ifd_input_t *input) {
  uint32_t i;
  for (i = 0; i < cur_n; i++) {
    ifd_request_t *r = cur_reqs[i];
    if (input >= r->inputs && input < r->inputs + r->n_inputs) return r;
  }
  return NULL;
}

static void run_batch(TRITONBACKEND_ModelInstance *in, ifd_request_t **reqs,
                      uint32_t n) {
  TRITONBACKEND_Backend *b = in->model->backend;
  TRITONSERVER_Error *e;
  uint64_t now = ifd_now_ns();
  uint32_t i;
  for (i = 0; i < n; i++) reqs[i]->t_exec_start = now;
  cur_reqs = reqs;
  cur_n = n;
  cur_in = in;
  e = b->execute(in, (TRITONBACKEND_Request **)reqs, n);
  cur_reqs = NULL;
  cur_n = 0;
  cur_in = NULL;
  if (e != NULL) {
    IFD_VERBOSE("execute on '%s' failed: %s", in->name,
                TRITONSERVER_ErrorMessage(e));
    fail_batch(reqs, n, e);
  }
}

void ifd__instance_execute(TRITONBACKEND_ModelInstance *in,
                           ifd_request_t **reqs, uint32_t n) {
  run_batch(in, reqs, n);
}

/* The queue instance `in` takes its batches from. */
static ifd__runq_t *queue_of(TRITONBACKEND_ModelInstance *in) {
  return in->model->targeted ? &in->q : &in->model->feed.q;
}

/* Takes the head batch off queue `q` into in->job; the feed's mutex is held
 * and q->head is not NULL. Returns its size, or (uint32_t)-1 when in->job
 * cannot grow: the batch then stays queued. Unlocks the mutex in every case.
 * *more says whether other batches wait behind it. */
static uint32_t take_locked(TRITONBACKEND_ModelInstance *in, ifd__runq_t *q,
                            int *more) {
  ifd__feed_t *f = &in->model->feed;
  ifd_request_t *first = q->head, *r;
  uint32_t n, i;
  int wake;

  IFD_ASSERT(first != NULL && first->job_n > 0);
  n = first->job_n;
  if (n > in->cap_job) {
    ifd_request_t **nj = realloc(in->job, n * sizeof(*nj));
    if (nj == NULL) {
      /* Leave the batch queued for another instance or a later try. */
      pthread_mutex_unlock(&f->mu);
      return (uint32_t)-1;
    }
    in->job = nj;
    in->cap_job = n;
  }
  q->head = first->job_next;
  if (q->head == NULL) q->tail = NULL;
  q->n_reqs -= n;
  q->n_jobs--;
  *more = q->head != NULL;
  /* Work left and an instance asleep (it was queued while this thread ran):
   * hand it on rather than run it after this batch. */
  wake = *more && q->waiting > 0;
  pthread_mutex_unlock(&f->mu);
  if (wake) pthread_cond_signal(&q->cv);
  /* The batch's requests are linked by ->next, which the loop no longer
   * touches once they are queued here. */
  for (i = 0, r = first; i < n; i++, r = r->next) in->job[i] = r;
  return n;
}

/* `in` took its model's last queued batch: siblings that wait for their
 * resources have nothing to run, and leave the line. */
static void withdraw_siblings(TRITONBACKEND_ModelInstance *in) {
  TRITONBACKEND_Model *bm = in->model;
  uint32_t i;
  if (bm->targeted) return;
  for (i = 0; i < bm->n_instances; i++)
    if (&bm->instances[i] != in && bm->instances[i].rl != NULL)
      ifd_rl_withdraw(bm->rl, bm->instances[i].rl);
}

/* take_job(): nothing taken, look again (a rate-limited wait ended). */
#define TAKE_AGAIN ((uint32_t)-2)

/* Rate limited: take_job() saw a batch queued (f->mu no longer held). Gets
 * the instance's resources, waiting for them when they are taken, then the
 * head batch if one is still queued. Returns as take_job(), or TAKE_AGAIN;
 * when a batch is returned the resources are held (run_job's caller gives
 * them back). */
static uint32_t take_limited(TRITONBACKEND_ModelInstance *in, ifd__runq_t *q,
                             int *more) {
  TRITONBACKEND_Model *bm = in->model;
  ifd__feed_t *f = &bm->feed;
  uint32_t n;

  if (!ifd_rl_request(bm->rl, in->rl)) {
    /* A sleeping sibling may get its resources where this one cannot. */
    if (!bm->targeted) {
      int wake;
      pthread_mutex_lock(&f->mu);
      wake = q->waiting > 0 && q->head != NULL;
      pthread_mutex_unlock(&f->mu);
      if (wake) pthread_cond_signal(&q->cv);
    }
    ifd_evq_defer_end();
    if (!ifd_rl_wait(bm->rl, in->rl)) return TAKE_AGAIN;
  }
  pthread_mutex_lock(&f->mu);
  if (q->head == NULL) {
    /* A sibling took it (or it was cancelled) meanwhile. */
    pthread_mutex_unlock(&f->mu);
    ifd_rl_release(bm->rl, in->rl, 0);
    return TAKE_AGAIN;
  }
  n = take_locked(in, q, more);
  if (n == (uint32_t)-1) {
    ifd_rl_release(bm->rl, in->rl, 0);
    return n;
  }
  if (!*more) withdraw_siblings(in);
  return n;
}

/* Takes the next batch, sleeping while the run queue is empty. Returns its
 * size, 0 when stopping, (uint32_t)-1 as take_locked(), or TAKE_AGAIN
 * (rate limited: look again). */
static uint32_t take_job(TRITONBACKEND_ModelInstance *in, int *more) {
  ifd__feed_t *f = &in->model->feed;
  ifd__runq_t *q = queue_of(in);
  uint32_t n;

  pthread_mutex_lock(&f->mu);
  if (q->head == NULL && !f->stop) {
    /* About to sleep: the loop must hear of everything done so far. */
    pthread_mutex_unlock(&f->mu);
    ifd_evq_defer_end();
    pthread_mutex_lock(&f->mu);
  }
  while (q->head == NULL && !f->stop) {
    q->waiting++;
    pthread_cond_wait(&q->cv, &f->mu);
    q->waiting--;
  }
  if (q->head == NULL) {
    pthread_mutex_unlock(&f->mu);
    return 0;
  }
  if (in->rl != NULL) {
    pthread_mutex_unlock(&f->mu);
    return take_limited(in, q, more);
  }
  n = take_locked(in, q, more);
  /* Rate limiting on, this instance without resources: it may have taken
   * what a sibling waits for. */
  if (in->model->rl != NULL && n != (uint32_t)-1 && !*more)
    withdraw_siblings(in);
  return n;
}

static void report_idle(TRITONBACKEND_ModelInstance *in, uint32_t n) {
  atomic_fetch_add(&in->done_jobs, 1);
  atomic_fetch_add(&in->done_reqs, n);
  if (atomic_exchange(&in->idle_queued, 1) == 0) {
    in->idle_ev.fn = on_idle;
    ifd_evq_push(ifd_server_evq(in->model->model->server), &in->idle_ev);
  }
}

/* Folds a job's cost into the model's moving average (weight 1/8). Several
 * instances may race here: the average is a hint, a lost sample is fine. */
static void note_cost(TRITONBACKEND_Model *bm, uint64_t cost) {
  uint64_t avg = atomic_load_explicit(&bm->exec_ns, memory_order_relaxed);
  avg = avg == 0 ? cost : avg - avg / 8 + cost / 8;
  atomic_store_explicit(&bm->exec_ns, avg, memory_order_relaxed);
}

/* Runs a batch taken into in->job and reports it, then decides, on what the
 * job cost, whether this thread's next wake-ups of the loop may be owed: a
 * cheap one with more work behind it opens (or keeps) a window in which they
 * are; a dear one, or the end of the backlog, pays what is owed. The decision
 * is taken after the job, when its cost is known; the next job may still be
 * long, and a debt it outlives is paid by another producer, by the loop when it
 * wakes, or by the loop's fallback timer (see base/event.h). take_job() pays
 * before it sleeps, so a window lasts only while work is queued. */
static void run_job(TRITONBACKEND_ModelInstance *in, uint32_t n, int more) {
  TRITONBACKEND_Model *bm = in->model;
  uint64_t t0 = ifd_now_ns(), cost;
  run_batch(in, in->job, n);
  /* Rate limited: the resources go back as soon as the execute returns
   * (a no-op for an inline step, which holds none). */
  if (in->rl != NULL) ifd_rl_release(bm->rl, in->rl, 1);
  cost = ifd_now_ns() - t0;
  note_cost(bm, cost);
  report_idle(in, n);
  if (bm->coalesce && more && cost < COALESCE_NS / 2)
    ifd_evq_defer_begin(ifd_server_evq(bm->model->server), COALESCE_NS);
  else
    ifd_evq_defer_end();
}

static void backend_fini(TRITONBACKEND_ModelInstance *in) {
  TRITONBACKEND_Backend *b = in->model->backend;
  TRITONSERVER_Error *e = NULL;
  if (b->inst_fini != NULL) e = b->inst_fini(in);
  if (e != NULL) {
    IFD_ERROR("TRITONBACKEND_ModelInstanceFinalize of '%s' failed: %s",
              in->name, TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
  }
}

/* --model-load-gpu-limit: an instance is not created on a GPU whose memory
 * in use is already past the limit's fraction (tritonserver's rule, checked
 * as each instance is created). 0, or IFD_EUNAVAIL with `err` filled. */
static int check_gpu_limit(TRITONBACKEND_ModelInstance *in, ifd_errmsg_t *err) {
  const ifd_server_opts_t *o = ifd_server_opts(in->model->model->server);
  uint64_t free_b = 0, total = 0;
  double limit, used;
  int d = (int)in->device_id;

  if (d < 0 || d >= 64 || !((o->gpu_limit_set >> d) & 1)) return 0;
  limit = o->gpu_limit[d];
  if (ifd_gpu_mem_info(&free_b, &total, err) < 0 || total == 0) {
    IFD_WARN(
        "instance '%s': cannot read GPU %d's memory use (%s): its "
        "--model-load-gpu-limit is not checked",
        in->name, d, err->text);
    ifd_errclear(err);
    return 0;
  }
  used = (double)(total - free_b) / (double)total;
  if (used <= limit) return 0;
  return ifd_errf(err, IFD_EUNAVAIL,
                  "can not create model instance '%s' on GPU %d: %.1f%% of "
                  "its %llu bytes are in use, past the --model-load-gpu-limit "
                  "of %.1f%%",
                  in->name, d, used * 100, (unsigned long long)total,
                  limit * 100);
}

/* TRITONBACKEND_ModelInstanceInitialize, on the calling thread, then the
 * model's warmup (warmup.c), with the result published for
 * ifd__instances_start(): the model is ready only after every instance
 * warmed up. A GPU instance's thread is bound to its device first, with a
 * stream of its own (cuda/gpu.h): the backend finds its device current, as
 * Triton's backend threads do, and the server's copies for this instance
 * (input and output buffers in GPU memory) run on that stream. An instance
 * whose warmup failed is finalized here. Returns 0 on success. */
static int instance_init(TRITONBACKEND_ModelInstance *in) {
  TRITONBACKEND_Backend *b = in->model->backend;
  TRITONSERVER_Error *e = NULL;
  if (in->kind == TRITONSERVER_INSTANCEGROUPKIND_GPU) {
    ifd_errmsg_t err;
    int rc;
    ifd_errclear(&err);
    rc = ifd_gpu_thread_bind(in->device_id, &err);
    if (rc == 0) rc = check_gpu_limit(in, &err);
    if (rc < 0) e = ifd__error_from(rc, err.text);
  }
  if (e == NULL && b->inst_init != NULL) e = b->inst_init(in);
  if (e == NULL && in->model->warmup != NULL) {
    e = ifd__warmup_run(in);
    if (e != NULL) {
      in->warmup_failed = 1;
      backend_fini(in);
    }
  }
  pthread_mutex_lock(&in->mu);
  in->init_state = e == NULL ? 1 : -1;
  in->init_err = e;
  pthread_cond_broadcast(&in->cv);
  pthread_mutex_unlock(&in->mu);
  return e == NULL ? 0 : -1;
}

static void instance_fini(TRITONBACKEND_ModelInstance *in) {
  backend_fini(in);
  ifd_gpu_thread_unbind();
}

/* --host-policy numa-node: what this thread allocates comes from the node
 * (MPOL_BIND, the thread's own policy; libc has no wrapper without
 * libnuma, hence the system call). A kernel without NUMA refuses it: a
 * warning, and the instance runs anyway. */
static void bind_memory(TRITONBACKEND_ModelInstance *in) {
  unsigned long mask[IFD_MAX_NUMA_NODES / (8 * sizeof(unsigned long))];
  const unsigned bits = 8 * sizeof(unsigned long);
  const int mpol_bind = 2; /* MPOL_BIND of <linux/mempolicy.h> */
  const unsigned node = (unsigned)in->numa_bind - 1;

  memset(mask, 0, sizeof(mask));
  mask[node / bits] |= 1ul << (node % bits);
  if (syscall(SYS_set_mempolicy, mpol_bind, mask,
              (unsigned long)IFD_MAX_NUMA_NODES + 1) != 0)
    IFD_WARN("instance '%s': cannot bind its memory to NUMA node %u: %s",
             in->name, node, strerror(errno));
}

static void *instance_main(void *arg) {
  TRITONBACKEND_ModelInstance *in = arg;

  /* --host-policy cpu-cores / numa-node (backend_api/model/loader.c). */
  if (in->pin) {
    int e = pthread_setaffinity_np(pthread_self(), sizeof(in->cpus), &in->cpus);
    if (e != 0)
      IFD_WARN("instance '%s': cannot run on the CPUs of its host policy: %s",
               in->name, strerror(e));
  }
  if (in->numa_bind > 0) bind_memory(in);

  if (instance_init(in) < 0) {
    ifd_gpu_thread_unbind();
    return NULL;
  }
  for (;;) {
    int more = 0;
    uint32_t n = take_job(in, &more);
    if (n == 0) break;
    if (n == TAKE_AGAIN) continue;
    if (n == (uint32_t)-1) {
      struct timespec ts = {0, 1000000};
      ifd_evq_defer_end();
      nanosleep(&ts, NULL);
      continue;
    }
    run_job(in, n, more);
  }
  ifd_evq_defer_end();
  instance_fini(in);
  return NULL;
}

int ifd__instances_inline;

int ifd__instance_step(TRITONBACKEND_ModelInstance *in) {
  ifd__feed_t *f = &in->model->feed;
  ifd__runq_t *q = queue_of(in);
  uint32_t n;
  int more = 0;
  pthread_mutex_lock(&f->mu);
  if (q->head == NULL) {
    pthread_mutex_unlock(&f->mu);
    return 0;
  }
  n = take_locked(in, q, &more);
  if (n == (uint32_t)-1) return IFD_ENOMEM;
  run_job(in, n, more);
  /* Inline, nothing is left owed when the step returns. */
  ifd_evq_defer_end();
  return 1;
}

int ifd__instance_report_batch(TRITONBACKEND_ModelInstance *in,
                               const ifd__batch_report_t *r) {
  int rc = 0;
  pthread_mutex_lock(&in->mu);
  if (in->n_reports == in->cap_reports) {
    uint32_t ncap = in->cap_reports ? in->cap_reports * 2 : 4;
    ifd__batch_report_t *nr = realloc(in->reports, ncap * sizeof(*nr));
    if (nr == NULL) {
      rc = IFD_ENOMEM;
      goto out_unlock;
    }
    in->reports = nr;
    in->cap_reports = ncap;
  }
  in->reports[in->n_reports++] = *r;
out_unlock:
  pthread_mutex_unlock(&in->mu);
  return rc;
}

void ifd__instance_flush_reports(TRITONBACKEND_ModelInstance *in) {
  ifd_model_stats_t *st = &in->model->model->stats;
  ifd__batch_report_t buf[8];
  uint32_t i, n;
  /* Copy a few at a time so the lock is held only for a memcpy. */
  do {
    pthread_mutex_lock(&in->mu);
    n = in->n_reports < 8 ? in->n_reports : 8;
    if (n > 0) memcpy(buf, in->reports + in->n_reports - n, n * sizeof(*buf));
    in->n_reports -= n;
    pthread_mutex_unlock(&in->mu);
    for (i = 0; i < n; i++)
      ifd_stats_batch(st, buf[i].batch_size, buf[i].exec_start,
                      buf[i].compute_start, buf[i].compute_end,
                      buf[i].exec_end);
  } while (n > 0);
}

/* Waits for instance `in` to finish initializing (and warming up); the
 * first failure becomes `rc` (Triton's text as it is). Returns rc. */
static int instance_wait_init(TRITONBACKEND_ModelInstance *in, int rc,
                              ifd_errmsg_t *err) {
  pthread_mutex_lock(&in->mu);
  while (in->init_state == 0) pthread_cond_wait(&in->cv, &in->mu);
  if (in->init_state < 0 && rc == 0) {
    if (in->warmup_failed) {
      /* Triton's text as it is: "failed to run warmup sample ...". */
      rc = ifd__code_from_class(TRITONSERVER_ErrorCode(in->init_err));
      ifd_errf(err, rc, "%s", TRITONSERVER_ErrorMessage(in->init_err));
      TRITONSERVER_ErrorDelete(in->init_err);
    } else {
      rc = ifd__take_error(in->init_err,
                           "TRITONBACKEND_ModelInstanceInitialize failed", err);
    }
    in->init_err = NULL;
  }
  pthread_mutex_unlock(&in->mu);
  return rc;
}

int ifd__instances_start(TRITONBACKEND_Model *bm, ifd_errmsg_t *err) {
  /* As Triton: instances initialize one after the other unless the backend
   * said, through TRITONBACKEND_BackendAttributeSetParallelModelInstance-
   * Loading, that it can initialize them concurrently. */
  int parallel = bm->backend != NULL && bm->backend->parallel_instances;
  uint32_t i;
  int rc;

  /* The warmup samples' data, read here on the loading thread; the
   * instances run them before they report their initialization. */
  rc = ifd__warmup_prepare(bm, err);
  if (rc < 0) return rc;
  for (i = 0; i < bm->n_instances && rc == 0; i++) {
    TRITONBACKEND_ModelInstance *in = &bm->instances[i];
    if (ifd__instances_inline) {
      in->inline_run = 1;
      instance_init(in);
      continue;
    }
    if (pthread_create(&in->thread, NULL, instance_main, in) != 0) {
      /* The started ones still read the samples: wait for them below. */
      rc =
          ifd_errf(err, IFD_ENOMEM, "cannot start a thread for '%s'", in->name);
      break;
    }
    in->started = 1;
    if (!parallel) rc = instance_wait_init(in, rc, err);
  }
  /* Collect every result (in parallel, the initializations overlap). */
  for (i = 0; i < bm->n_instances; i++) {
    TRITONBACKEND_ModelInstance *in = &bm->instances[i];
    if (!in->started && !in->inline_run) continue;
    rc = instance_wait_init(in, rc, err);
  }
  /* Every instance is past its warmup: its statistics count (as in
   * Triton), and the samples go. */
  if (rc == 0 && bm->warmup != NULL)
    for (i = 0; i < bm->n_instances; i++) ifd__warmup_count(&bm->instances[i]);
  ifd__warmup_free(bm->warmup);
  bm->warmup = NULL;
  return rc;
}

void ifd__instances_stop(TRITONBACKEND_Model *bm) {
  ifd__feed_t *f = &bm->feed;
  uint32_t i;
  pthread_mutex_lock(&f->mu);
  f->stop = 1;
  pthread_cond_broadcast(&f->q.cv);
  for (i = 0; i < bm->n_instances; i++)
    pthread_cond_broadcast(&bm->instances[i].q.cv);
  pthread_mutex_unlock(&f->mu);
  /* An instance waiting for resources looks at its queue again: it exits
   * when nothing is left, or waits again for what is. */
  for (i = 0; i < bm->n_instances; i++)
    if (bm->instances[i].rl != NULL)
      ifd_rl_withdraw(bm->rl, bm->instances[i].rl);
  for (i = 0; i < bm->n_instances; i++) {
    TRITONBACKEND_ModelInstance *in = &bm->instances[i];
    if (in->inline_run) {
      /* Queued work is the caller's to take back (ifd_backend_take_queued);
       * finalize as the thread would. */
      if (in->init_state > 0) instance_fini(in);
      in->inline_run = 0;
      continue;
    }
    if (!in->started) continue;
    pthread_join(in->thread, NULL);
    in->started = 0;
  }
}

/* How many sleeping instances of `bm` have a queued batch to wake for, and
 * (into wake[], when targeted) which ones; f->mu is held. */
static uint32_t count_wakes(TRITONBACKEND_Model *bm, uint32_t *wake) {
  uint32_t i, n = 0;
  if (!bm->targeted) {
    ifd__runq_t *q = &bm->feed.q;
    return q->waiting < q->n_jobs ? q->waiting : (uint32_t)q->n_jobs;
  }
  for (i = 0; i < bm->n_instances; i++)
    if (bm->instances[i].q.n_jobs > 0 && bm->instances[i].q.waiting > 0)
      wake[n++] = i;
  return n;
}

static void on_wake(ifd_event_t *ev) {
  TRITONBACKEND_Model *bm = ifd_container_of(ev, TRITONBACKEND_Model, wake_ev);
  ifd__feed_t *f = &bm->feed;
  uint32_t stack[16], *which = stack, wake, i;
  bm->wake_pending = 0;
  if (bm->targeted && bm->n_instances > 16) {
    which = malloc(bm->n_instances * sizeof(*which));
    /* Out of memory: wake them all (a spurious wake-up costs a switch). */
    if (which == NULL) {
      pthread_mutex_lock(&f->mu);
      for (i = 0; i < bm->n_instances; i++)
        pthread_cond_signal(&bm->instances[i].q.cv);
      pthread_mutex_unlock(&f->mu);
      return;
    }
  }
  pthread_mutex_lock(&f->mu);
  wake = count_wakes(bm, which);
  pthread_mutex_unlock(&f->mu);
  /* A cheap model's results are due within microseconds of waking it: the
   * loop may wait for them rather than sleep (base/event.h). Said before
   * the signal, which may run the instance at once on this core. */
  if (wake > 0 && bm->coalesce)
    ifd_evq_expect(
        ifd_server_evq(bm->model->server),
        2 * atomic_load_explicit(&bm->exec_ns, memory_order_relaxed) +
            EXPECT_SLACK_NS);
  /* One sleeping instance per queued batch, so N instances run N batches
   * side by side. Signalled after unlocking: a thread woken while the mutex
   * is held would run, block on it at once, and cost two more switches. */
  if (!bm->targeted)
    while (wake-- > 0) pthread_cond_signal(&f->q.cv);
  else
    for (i = 0; i < wake; i++)
      pthread_cond_signal(&bm->instances[which[i]].q.cv);
  if (which != stack) free(which);
}

/* Appends a batch to `q` under the feed's mutex and schedules the wake-up. */
static void enqueue_on(ifd_model_t *m, ifd__runq_t *q, ifd_request_t **reqs,
                       uint32_t n) {
  TRITONBACKEND_Model *bm = m->backend_model;
  ifd__feed_t *f = &bm->feed;
  uint32_t i;

  /* The scheduler hands over a batch of at least one request; from here
   * the run queue owns them until an instance takes the batch. */
  IFD_ASSERT(n > 0);
  for (i = 0; i + 1 < n; i++) reqs[i]->next = reqs[i + 1];
  reqs[n - 1]->next = NULL;
  reqs[0]->job_n = n;
  reqs[0]->job_next = NULL;
  pthread_mutex_lock(&f->mu);
  if (q->tail != NULL)
    q->tail->job_next = reqs[0];
  else
    q->head = reqs[0];
  q->tail = reqs[0];
  q->n_reqs += n;
  q->n_jobs++;
  pthread_mutex_unlock(&f->mu);
  /* A sleeping instance is woken once, when this loop iteration has read
   * every request that arrived with this one: it then works through all of
   * them in one go instead of one context switch pair per request. */
  if (!bm->wake_pending) {
    bm->wake_pending = 1;
    bm->wake_ev.fn = on_wake;
    ifd_server_at_iteration_end(m->server, &bm->wake_ev);
  }
}

void ifd_backend_enqueue(ifd_model_t *m, ifd_request_t **reqs, uint32_t n) {
  TRITONBACKEND_Model *bm = m->backend_model;
  /* A targeted model's batches all go through ifd_backend_enqueue_to; one
   * that comes here runs on the first instance. */
  enqueue_on(m, bm->targeted ? &bm->instances[0].q : &bm->feed.q, reqs, n);
}

void ifd_backend_enqueue_to(ifd_model_t *m, uint32_t instance,
                            ifd_request_t **reqs, uint32_t n) {
  TRITONBACKEND_Model *bm = m->backend_model;
  if (!bm->targeted || instance >= bm->n_instances) {
    ifd_backend_enqueue(m, reqs, n);
    return;
  }
  enqueue_on(m, &bm->instances[instance].q, reqs, n);
}

uint64_t ifd_backend_queued(const ifd_model_t *m) {
  TRITONBACKEND_Model *bm = m->backend_model;
  uint64_t n;
  uint32_t i;
  if (bm == NULL) return 0;
  pthread_mutex_lock(&bm->feed.mu);
  n = bm->feed.q.n_reqs;
  if (bm->targeted)
    for (i = 0; i < bm->n_instances; i++) n += bm->instances[i].q.n_reqs;
  pthread_mutex_unlock(&bm->feed.mu);
  return n;
}

/* Moves every batch of `q` onto the list at *tail (linked by ->next);
 * returns the new tail. f->mu is held. */
static ifd_request_t **drain_runq(ifd__runq_t *q, ifd_request_t **tail,
                                  uint64_t *jobs) {
  ifd_request_t *job = q->head;
  uint32_t i;
  q->head = q->tail = NULL;
  q->n_reqs = 0;
  q->n_jobs = 0;
  while (job != NULL) {
    ifd_request_t *next_job = job->job_next, *r = job;
    (*jobs)++;
    *tail = r;
    for (i = 1; i < job->job_n; i++) r = r->next;
    tail = &r->next;
    *tail = NULL;
    job = next_job;
  }
  return tail;
}

ifd_request_t *ifd_backend_take_queued(ifd_model_t *m, uint64_t *jobs) {
  TRITONBACKEND_Model *bm = m->backend_model;
  ifd_request_t *all = NULL, **tail = &all;
  uint32_t i;
  *jobs = 0;
  if (bm == NULL) return NULL;
  pthread_mutex_lock(&bm->feed.mu);
  tail = drain_runq(&bm->feed.q, tail, jobs);
  for (i = 0; i < bm->n_instances; i++)
    tail = drain_runq(&bm->instances[i].q, tail, jobs);
  pthread_mutex_unlock(&bm->feed.mu);
  return all;
}

int ifd_backend_take_request(ifd_model_t *m, ifd_request_t *req,
                             int *job_gone) {
  TRITONBACKEND_Model *bm = m->backend_model;
  ifd__runq_t *q;
  ifd_request_t *job, *prev_job = NULL, *r, *prev;
  uint32_t i;
  int found = 0;

  *job_gone = 0;
  if (bm == NULL || bm->targeted) return 0;
  q = &bm->feed.q;
  /* A walk of the queue under the lock: cancellation is rare, and the
   * queue holds what the instances have not reached yet. */
  pthread_mutex_lock(&bm->feed.mu);
  for (job = q->head; job != NULL && !found;
       prev_job = job, job = job->job_next) {
    for (i = 0, r = job, prev = NULL; i < job->job_n;
         i++, prev = r, r = r->next) {
      if (r != req) continue;
      found = 1;
      break;
    }
    if (!found) continue;
    if (job->job_n == 1) {
      /* The batch goes. */
      if (prev_job != NULL)
        prev_job->job_next = job->job_next;
      else
        q->head = job->job_next;
      if (q->tail == job) q->tail = prev_job;
      q->n_jobs--;
      *job_gone = 1;
    } else if (prev == NULL) {
      /* Its first request goes: the next one heads the batch. */
      ifd_request_t *head = req->next;
      head->job_n = job->job_n - 1;
      head->job_next = job->job_next;
      if (prev_job != NULL)
        prev_job->job_next = head;
      else
        q->head = head;
      if (q->tail == job) q->tail = head;
    } else {
      prev->next = req->next;
      job->job_n--;
    }
    q->n_reqs--;
    req->next = NULL;
    req->job_next = NULL;
    break;
  }
  pthread_mutex_unlock(&bm->feed.mu);
  return found;
}

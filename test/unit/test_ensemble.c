/*
 * test/unit/test_ensemble.c - the ensemble scheduler (sched/ensemble.c):
 * the step graph built from configs, and the executor driven through the
 * server on a real loop whose composing models run on sched_fixture.h's
 * fake backend.
 *
 * The fake "executes" a step's batch on the loop thread: each request gets a
 * FINAL response whose output OUT<n> is a fresh copy of its input IN<n>
 * (like the identity backend), statistics as a backend reports them, and a
 * release. So the tests see which steps run when, with which input buffers
 * (the ensemble passes tensors by reference: the pointers must be the very
 * buffers of the request or of the previous step's response), what the
 * ensemble answers, and what it counts.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "sched_fixture.h"

/* The unit under test, for its executor's internals (ens_run_t). */
#include <inttypes.h>

#include "../../sched/ensemble.c"
#include "../../sched/ensemble_exec.c"

static void write_config(const char *name, const char *text) {
  char path[512];
  FILE *f;
  snprintf(path, sizeof(path), "%s/%s", root, name);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof(path), "%s/%s/1", root, name);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof(path), "%s/%s/config.pbtxt", root, name);
  f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "name: \"%s\" %s", name, text);
  fclose(f);
}

#define IO1                                                     \
  "input [{ name: \"IN\" data_type: TYPE_FP32 dims: [ -1 ] }] " \
  "output [{ name: \"OUT\" data_type: TYPE_FP32 dims: [ -1 ] }] "

/* Steps: "a" and "b" (IN -> OUT), "join" (IN, IN1 -> OUT, OUT1). */
static const char chain_cfg[] =
    "platform: \"ensemble\" max_batch_size: 8 " IO1
    "ensemble_scheduling { step [ "
    "{ model_name: \"a\" model_version: -1 input_map { key: \"IN\" value: "
    "\"IN\" } output_map { key: \"OUT\" value: \"mid\" } }, "
    "{ model_name: \"b\" model_version: -1 input_map { key: \"IN\" value: "
    "\"mid\" } output_map { key: \"OUT\" value: \"OUT\" } } ] }";

/* IN feeds a and b; join reads both; MID (a's output) is an ensemble output
 * and join's input; OUT1 comes from join only. */
static const char fan_cfg[] =
    "platform: \"ensemble\" max_batch_size: 8 "
    "input [{ name: \"IN\" data_type: TYPE_FP32 dims: [ -1 ] }] "
    "output [{ name: \"OUT\" data_type: TYPE_FP32 dims: [ -1 ] }, "
    "{ name: \"OUT1\" data_type: TYPE_FP32 dims: [ -1 ] }, "
    "{ name: \"MID\" data_type: TYPE_FP32 dims: [ -1 ] }] "
    "ensemble_scheduling { step [ "
    "{ model_name: \"a\" model_version: -1 input_map { key: \"IN\" value: "
    "\"IN\" } output_map { key: \"OUT\" value: \"MID\" } }, "
    "{ model_name: \"b\" model_version: 1 input_map { key: \"IN\" value: "
    "\"IN\" } output_map { key: \"OUT\" value: \"tb\" } }, "
    "{ model_name: \"join\" model_version: -1 "
    "input_map { key: \"IN\" value: \"MID\" } "
    "input_map { key: \"IN1\" value: \"tb\" } "
    "output_map { key: \"OUT\" value: \"OUT\" } "
    "output_map { key: \"OUT1\" value: \"OUT1\" } } ] }";

static int with_nb; /* write_models adds ens_nb */

static void write_models(void) {
  write_config("a", "backend: \"fake\" max_batch_size: 8 " IO1
                    "instance_group [{ count: 2 }]");
  write_config("b", "backend: \"fake\" max_batch_size: 8 " IO1
                    "instance_group [{ count: 2 }]");
  write_config("dyn", "backend: \"fake\" max_batch_size: 8 " IO1
                      "instance_group [{ count: 1 }] dynamic_batching { "
                      "max_queue_delay_microseconds: 30000000 "
                      "preferred_batch_size: [ 2 ] }");
  write_config("join",
               "backend: \"fake\" max_batch_size: 8 "
               "input [{ name: \"IN\" data_type: TYPE_FP32 dims: [ -1 ] }, "
               "{ name: \"IN1\" data_type: TYPE_FP32 dims: [ -1 ] }] "
               "output [{ name: \"OUT\" data_type: TYPE_FP32 dims: [ -1 ] }, "
               "{ name: \"OUT1\" data_type: TYPE_FP32 dims: [ -1 ] }] "
               "instance_group [{ count: 1 }]");
  write_config("ens", chain_cfg);
  /* The chain in an ensemble that does not batch, over models that do
   * (only for its own test, so that another test's setup does not depend on
   * the cross-model checks admitting it). */
  if (with_nb)
    write_config("ens_nb",
                 "platform: \"ensemble\" max_batch_size: 0 "
                 "input [{ name: \"IN\" data_type: TYPE_FP32 dims: [ 2 ] }] "
                 "output [{ name: \"OUT\" data_type: TYPE_FP32 dims: [ 2 ] }] "
                 "ensemble_scheduling { step [ "
                 "{ model_name: \"a\" model_version: -1 input_map { key: "
                 "\"IN\" value: \"IN\" } output_map { key: \"OUT\" value: "
                 "\"mid\" } }, "
                 "{ model_name: \"b\" model_version: -1 input_map { key: "
                 "\"IN\" value: \"mid\" } output_map { key: \"OUT\" value: "
                 "\"OUT\" } } ] }");
  write_config("fan", fan_cfg);
  /* An ensemble whose first step is the ensemble "ens". */
  write_config("outer",
               "platform: \"ensemble\" max_batch_size: 8 " IO1
               "ensemble_scheduling { step [ "
               "{ model_name: \"ens\" model_version: -1 input_map { key: "
               "\"IN\" value: \"IN\" } output_map { key: \"OUT\" value: "
               "\"x\" } }, "
               "{ model_name: \"a\" model_version: -1 input_map { key: "
               "\"IN\" value: \"x\" } output_map { key: \"OUT\" value: "
               "\"OUT\" } } ] }");
  write_config("ens_dyn",
               "platform: \"ensemble\" max_batch_size: 8 " IO1
               "ensemble_scheduling { step [ "
               "{ model_name: \"dyn\" model_version: -1 input_map { key: "
               "\"IN\" value: \"IN\" } output_map { key: \"OUT\" value: "
               "\"OUT\" } } ] }");
}

/* ---- the fake composing models' execution ---------------------------------
 */

/* Executes batch k like the identity backend: OUT<n> = copy of IN<n> for
 * every requested output, statistics reported (50 ns input, 200 ns infer,
 * 10 ns output), then the release and the idle report. */
/* A response to `r` like the identity backend's: OUT<n> = a copy of IN<n>
 * for every requested output (or OUT alone when none is named). */
static ifd_response_t *identity_response(ifd_request_t *r) {
  ifd_response_t *resp = ifd_response_new(r);
  /* An ensemble step asks for its mapped outputs; a direct request here
   * asks for none (all): OUT. */
  uint32_t nout = r->n_outputs > 0 ? r->n_outputs : 1, j;
  assert_non_null(resp);
  resp->outputs = ifd_pool_calloc(&resp->pool, nout, sizeof(ifd_output_t));
  resp->cap_outputs = nout;
  for (j = 0; j < nout; j++) {
    const char *oname = r->n_outputs > 0 ? r->outputs[j].name : "OUT";
    char iname[16];
    const ifd_input_t *in = NULL;
    ifd_output_t *o = &resp->outputs[resp->n_outputs];
    uint32_t q;
    snprintf(iname, sizeof(iname), "IN%s", oname + 3);
    for (q = 0; q < r->n_inputs; q++)
      if (strcmp(r->inputs[q].name, iname) == 0) in = &r->inputs[q];
    assert_non_null(in);
    o->name = oname;
    o->dtype = in->dtype;
    o->shape = in->shape;
    o->ndims = in->ndims;
    o->buffer = malloc(in->byte_size ? in->byte_size : 1);
    memcpy(o->buffer, in->data, in->byte_size);
    o->byte_size = in->byte_size;
    o->resp = resp;
    resp->n_outputs++;
  }
  return resp;
}

/* Statistics as a backend reports them, the release, the idle report. */
static void finish_batch(int k, int ok) {
  batch_t *b = &batches[k];
  loaded_t *l = model_of(b->m);
  uint32_t i;
  for (i = 0; i < b->n; i++) {
    ifd_request_t *r = b->reqs[i];
    r->t_exec_start = 1000;
    r->t_compute_start = 1050;
    r->t_compute_end = 1250;
    r->t_exec_end = 1260;
    r->stat_reported = 1;
    r->stat_success = ok;
    ifd_request_release(r, 1);
  }
  l->idle(b->m, b->instance, 1, b->n, l->arg);
  pump();
}

/* Executes batch k like the identity backend (or fails each request with
 * `error`): statistics reported (50 ns input, 200 ns infer, 10 ns output),
 * then the release and the idle report. */
static void run_batch(int k, const char *error) {
  batch_t *b = &batches[k];
  uint32_t i;
  assert_true(k < n_batches);
  assert_false(b->done);
  b->done = 1;
  for (i = 0; i < b->n; i++) {
    ifd_response_t *resp = error == NULL ? identity_response(b->reqs[i])
                                         : ifd_response_new(b->reqs[i]);
    assert_non_null(resp);
    ifd_response_send(resp, IFD_RESPONSE_FINAL, error ? IFD_EINVAL : 0, error);
  }
  finish_batch(k, error == NULL);
}

/* Executes batch k as a decoupled model would: `n` responses with outputs,
 * then a FINAL one with flags only. */
static void run_batch_decoupled(int k, int n) {
  batch_t *b = &batches[k];
  uint32_t i;
  int j;
  assert_true(k < n_batches);
  b->done = 1;
  for (i = 0; i < b->n; i++) {
    ifd_response_t *resp;
    for (j = 0; j < n; j++)
      ifd_response_send(identity_response(b->reqs[i]), 0, 0, NULL);
    resp = ifd_response_new(b->reqs[i]);
    assert_non_null(resp);
    resp->empty = 1;
    ifd_response_send(resp, IFD_RESPONSE_FINAL, 0, NULL);
  }
  finish_batch(k, 1);
}

static const char *model_of_batch(int k) {
  assert_true(k < n_batches);
  return batches[k].m->name;
}

/* ---- the ensemble's client -------------------------------------------------
 */

typedef struct ens_answer {
  char id[32];
  int error;
  char msg[256];
  uint32_t n_outputs;
  char names[4][16];
  const void *buffers[4];
  float first[4]; /* first value of each output */
  uint32_t ndims[4];
  int64_t dim0[4];
  char params[128];
} ens_answer_t;

static ens_answer_t ens_answers[64];
static int n_ens_answers;

static void on_ens_response(ifd_response_t *resp, void *arg) {
  ifd_request_t *req = resp->req;
  ens_answer_t *a = &ens_answers[n_ens_answers++];
  uint32_t i;
  size_t off = 0;
  (void)arg;
  assert_true(n_ens_answers <= 64);
  assert_true(resp->flags & IFD_RESPONSE_FINAL);
  snprintf(a->id, sizeof(a->id), "%s", req->id);
  a->error = resp->error;
  snprintf(a->msg, sizeof(a->msg), "%s",
           resp->error_msg != NULL ? resp->error_msg : "");
  a->n_outputs = resp->n_outputs;
  for (i = 0; i < resp->n_outputs && i < 4; i++) {
    snprintf(a->names[i], sizeof(a->names[i]), "%s", resp->outputs[i].name);
    a->buffers[i] = resp->outputs[i].buffer;
    a->ndims[i] = resp->outputs[i].ndims;
    a->dim0[i] = resp->outputs[i].ndims > 0 ? resp->outputs[i].shape[0] : -1;
    a->first[i] = resp->outputs[i].byte_size >= 4
                      ? *(const float *)resp->outputs[i].buffer
                      : -1;
  }
  for (i = 0; i < resp->n_params; i++) {
    const ifd_param_t *p = &resp->params[i];
    off += (size_t)snprintf(a->params + off, sizeof(a->params) - off,
                            "%s=", p->key);
    if (p->type == IFD_PARAM_INT)
      off += (size_t)snprintf(a->params + off, sizeof(a->params) - off,
                              "%" PRId64 ";", p->v.i);
    else if (p->type == IFD_PARAM_BOOL)
      off += (size_t)snprintf(a->params + off, sizeof(a->params) - off, "%d;",
                              p->v.b ? 1 : 0);
    else if (p->type == IFD_PARAM_STRING)
      off += (size_t)snprintf(a->params + off, sizeof(a->params) - off, "%s;",
                              p->v.s);
  }
  ifd_response_free(resp);
  ifd_request_unref(req);
}

static float in_data[4][8];

/* Submits to ensemble `model` one input IN of `batch` x 2 floats (row r
 * value base + r), asking for `outs` (NULL: all). Returns the request, or
 * NULL when refused up front (*rc says why). */
static ifd_request_t *ens_submit_req(const char *model, const char *id,
                                     int slot, float base, int64_t batch,
                                     const char *const *outs, int *rc) {
  ifd_request_t *req = ifd_request_new(server);
  int64_t shape[2] = {batch, 2};
  ifd_input_t *in;
  ifd_errmsg_t err;
  int r, i;

  assert_non_null(req);
  req->model_name = model;
  req->id = ifd_pool_strndup(&req->pool, id, strlen(id));
  req->on_response = on_ens_response;
  in = ifd_request_add_input(req, "IN", 2, IFD_TYPE_FP32, shape, 2);
  assert_non_null(in);
  for (i = 0; i < batch * 2; i++) in_data[slot][i] = base + (float)(i / 2);
  in->data = in_data[slot];
  in->byte_size = (uint64_t)batch * 2 * sizeof(float);
  for (i = 0; outs != NULL && outs[i] != NULL; i++)
    assert_non_null(ifd_request_add_output(req, outs[i], strlen(outs[i])));
  ifd_errclear(&err);
  r = ifd_request_submit(req, &err);
  if (rc != NULL) *rc = r;
  if (r < 0) {
    ifd_request_unref(req);
    return NULL;
  }
  return req;
}

static ifd_model_t *find(const char *name) {
  ifd_model_t *m;
  ifd_errmsg_t err;
  assert_int_equal(
      ifd_server_find_model(server, name, strlen(name), -1, &m, &err), 0);
  return m;
}

static const ifd_input_t *input_of(ifd_request_t *r, const char *name) {
  uint32_t i;
  for (i = 0; i < r->n_inputs; i++)
    if (strcmp(r->inputs[i].name, name) == 0) return &r->inputs[i];
  fail_msg("no input %s", name);
  return NULL;
}

static const void *output_buffer(int k, const char *name) {
  /* The response of batch k's request went to the ensemble, which holds it
   * until it ends: read it through the execution. */
  ifd_request_t *r = batches[k].reqs[0];
  ens_run_t *run = r->cb_arg;
  const ifd_output_t *o;
  assert_non_null(run->resp);
  o = ifd_response_output(run->resp, name);
  assert_non_null(o);
  return o->buffer;
}

/* ---- the graph ------------------------------------------------------------
 */

static ifd_model_config_t *parse(const char *name, const char *text) {
  ifd_model_config_t *cfg = NULL;
  ifd_errmsg_t err;
  char buf[2048];
  snprintf(buf, sizeof(buf), "name: \"%s\" %s", name, text);
  assert_int_equal(ifd_config_parse(buf, strlen(buf), "t", name, &cfg, &err),
                   0);
  return cfg;
}

static void test_graph_chain(void **state) {
  ifd_model_config_t *cfg = parse("ens", chain_cfg);
  ens_graph_t g;
  ifd_errmsg_t err;
  (void)state;
  assert_int_equal(ifd__ens_graph_build(cfg, &g, &err), 0);
  assert_int_equal(g.n_inputs, 1);
  assert_int_equal(g.n_tensors, 3); /* IN, mid, OUT */
  assert_int_equal(g.n_steps, 2);
  assert_string_equal(g.tensors[0].name, "IN");
  assert_int_equal(g.tensors[0].producer, -1);
  assert_int_equal(g.tensors[0].n_readers, 1);
  assert_int_equal(g.tensors[0].readers[0], 0);
  assert_string_equal(g.tensors[1].name, "mid");
  assert_int_equal(g.tensors[1].producer, 0);
  assert_int_equal(g.tensors[1].readers[0], 1);
  assert_string_equal(g.steps[1].model, "b");
  assert_int_equal(g.steps[1].version, -1);
  assert_string_equal(g.steps[1].in[0].name, "IN");
  assert_int_equal(g.steps[1].in[0].tensor, 1);
  assert_string_equal(g.steps[1].req_outs[0].name, "OUT");
  assert_int_equal(g.n_outputs, 1);
  assert_int_equal(g.outputs[0], 2);
  assert_int_equal(g.needs[0], 1);
  assert_int_equal(g.needs[1], 1);
  ifd__ens_graph_free(&g);
  ifd_config_free(cfg);
}

static void test_graph_fan(void **state) {
  ifd_model_config_t *cfg = parse("fan", fan_cfg);
  ens_graph_t g;
  ifd_errmsg_t err;
  int64_t mid, tb;
  (void)state;
  assert_int_equal(ifd__ens_graph_build(cfg, &g, &err), 0);
  assert_int_equal(g.n_steps, 3);
  assert_int_equal(g.tensors[0].n_readers, 2); /* IN feeds a and b */
  mid = ifd__ens_find_tensor(&g, "MID");
  tb = ifd__ens_find_tensor(&g, "tb");
  assert_true(mid > 0 && tb > 0);
  assert_int_equal(g.tensors[mid].n_readers, 1);
  assert_int_equal(g.tensors[mid].readers[0], 2);
  assert_int_equal(g.steps[1].version, 1);
  assert_int_equal(g.steps[2].n_in, 2);
  assert_int_equal(g.steps[2].n_out, 2);
  assert_int_equal(g.n_outputs, 3);
  /* OUT needs every step; MID only a. */
  assert_memory_equal(&g.needs[0 * 3], "\1\1\1", 3);
  assert_memory_equal(&g.needs[1 * 3], "\1\1\1", 3);
  assert_memory_equal(&g.needs[2 * 3], "\1\0\0", 3);
  ifd__ens_graph_free(&g);
  ifd_config_free(cfg);
}

static void test_graph_refused(void **state) {
  ifd_model_config_t *cfg;
  ens_graph_t g;
  ifd_errmsg_t err;
  (void)state;
  /* A tensor written twice. */
  cfg =
      parse("e", "platform: \"ensemble\" " IO1
                 "ensemble_scheduling { step [ "
                 "{ model_name: \"a\" input_map { key: \"IN\" value: \"IN\" } "
                 "output_map { key: \"OUT\" value: \"OUT\" } }, "
                 "{ model_name: \"b\" input_map { key: \"IN\" value: \"IN\" } "
                 "output_map { key: \"OUT\" value: \"OUT\" } } ] }");
  assert_int_equal(ifd__ens_graph_build(cfg, &g, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "'OUT'"));
  ifd_config_free(cfg);
  /* An output no step writes. */
  cfg =
      parse("e", "platform: \"ensemble\" " IO1
                 "ensemble_scheduling { step [ "
                 "{ model_name: \"a\" input_map { key: \"IN\" value: \"IN\" } "
                 "output_map { key: \"OUT\" value: \"x\" } } ] }");
  assert_int_equal(ifd__ens_graph_build(cfg, &g, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "written by no step"));
  ifd_config_free(cfg);
  /* No steps; and a dynamic batching config (the scheduling oneof) is no
   * ensemble. */
  cfg = parse("e", "platform: \"ensemble\" " IO1);
  assert_int_equal(ifd__ens_graph_build(cfg, &g, &err), IFD_EINVAL);
  ifd_config_free(cfg);
  cfg = parse("e", "backend: \"x\" " IO1 "dynamic_batching { }");
  assert_false(ifd__ensemble_is(cfg));
  ifd_config_free(cfg);
}

/* ---- execution ------------------------------------------------------------
 */

/* A chain: b starts only when a is done, a reads the request's own input
 * buffer, b reads a's output buffer, and the answer points at b's: nothing
 * is copied. Flags and correlation ID go to each step; the answer carries
 * Triton's parameters. Statistics: the ensemble's own counts, compute
 * durations summed over its steps; each step model counts its request. */
static void test_chain(void **state) {
  ifd_request_t *r;
  ifd_model_t *ens, *a;
  const void *a_out, *b_out;
  (void)state;
  r = ens_submit_req("ens", "c0", 0, 7, 1, NULL, NULL);
  assert_non_null(r);
  assert_int_equal(n_batches, 1);
  assert_string_equal(model_of_batch(0), "a");
  assert_ptr_equal(input_of(batches[0].reqs[0], "IN")->data, in_data[0]);
  assert_string_equal(batches[0].reqs[0]->id, "c0");
  run_batch(0, NULL);
  assert_int_equal(n_batches, 2);
  assert_string_equal(model_of_batch(1), "b");
  a_out = output_buffer(0, "OUT");
  assert_ptr_equal(input_of(batches[1].reqs[0], "IN")->data, a_out);
  assert_int_equal(n_ens_answers, 0);
  run_batch(1, NULL);
  assert_int_equal(n_ens_answers, 1);
  assert_string_equal(ens_answers[0].id, "c0");
  assert_int_equal(ens_answers[0].error, 0);
  assert_int_equal(ens_answers[0].n_outputs, 1);
  assert_string_equal(ens_answers[0].names[0], "OUT");
  (void)b_out;
  assert_true(ens_answers[0].first[0] == 7.0f);
  assert_string_equal(ens_answers[0].params,
                      "sequence_id=0;sequence_start=0;sequence_end=0;");

  ens = find("ens");
  a = find("a");
  assert_int_equal(ens->stats.success.count, 1);
  assert_int_equal(ens->stats.fail.count, 0);
  assert_int_equal(ens->stats.inference_count, 1);
  assert_int_equal(ens->stats.execution_count, 1);
  assert_int_equal(ens->stats.compute_input.ns, 100);
  assert_int_equal(ens->stats.compute_infer.ns, 400);
  assert_int_equal(ens->stats.compute_output.ns, 20);
  assert_int_equal(ens->stats.n_batches, 1);
  assert_int_equal(ens->stats.batches[0].batch_size, 1);
  assert_int_equal(ens->stats.batches[0].compute_infer.ns, 400);
  assert_int_equal(a->stats.success.count, 1);
  assert_int_equal(a->stats.compute_infer.ns, 200);
  assert_int_equal(ifd_sched_model_ops()->pending(ens), 0);
}

/* The answer's outputs are the last step's buffers themselves. */
static void test_chain_no_copy(void **state) {
  ifd_request_t *r;
  const void *b_out;
  (void)state;
  r = ens_submit_req("ens", "nc", 0, 3, 2, NULL, NULL);
  assert_non_null(r);
  run_batch(0, NULL);
  /* Hold the answer back to compare: read b's output before it runs. */
  run_batch(1, NULL);
  assert_int_equal(n_ens_answers, 1);
  /* b's response is held by the execution until the answer was freed, so
   * its buffer is the one the answer pointed at: b copied a's output into a
   * fresh buffer; the ensemble added no copy of its own. */
  b_out = ens_answers[0].buffers[0];
  assert_non_null(b_out);
  assert_ptr_not_equal(b_out, in_data[0]);
  assert_true(ens_answers[0].first[0] == 3.0f);
  assert_int_equal(find("ens")->stats.inference_count, 2);
  assert_int_equal(find("ens")->stats.batches[0].batch_size, 2);
}

/* Sequence flags and the correlation ID reach every step; the answer's
 * parameters carry them (a string ID stays a string). */
static void test_sequence_flags(void **state) {
  ifd_request_t *r = ifd_request_new(server);
  int64_t shape[2] = {1, 2};
  ifd_input_t *in;
  ifd_errmsg_t err;
  (void)state;
  r->model_name = "ens";
  r->id = "sq";
  r->correlation_id_str = "abc";
  r->flags = IFD_REQUEST_FLAG_SEQUENCE_START;
  r->on_response = on_ens_response;
  in = ifd_request_add_input(r, "IN", 2, IFD_TYPE_FP32, shape, 2);
  in->data = in_data[0];
  in->byte_size = 8;
  assert_int_equal(ifd_request_submit(r, &err), 0);
  assert_string_equal(batches[0].reqs[0]->correlation_id_str, "abc");
  assert_int_equal(batches[0].reqs[0]->flags, IFD_REQUEST_FLAG_SEQUENCE_START);
  run_batch(0, NULL);
  assert_string_equal(batches[1].reqs[0]->correlation_id_str, "abc");
  assert_int_equal(batches[1].reqs[0]->flags, IFD_REQUEST_FLAG_SEQUENCE_START);
  run_batch(1, NULL);
  assert_int_equal(n_ens_answers, 1);
  assert_string_equal(ens_answers[0].params,
                      "sequence_id=abc;sequence_start=1;sequence_end=0;");
}

/* Fan-out and fan-in: a and b start together; join only once both are
 * done, whatever their order, reading both their buffers. */
static void test_fan(void **state) {
  ifd_request_t *r;
  (void)state;
  r = ens_submit_req("fan", "f0", 0, 5, 1, NULL, NULL);
  assert_non_null(r);
  assert_int_equal(n_batches, 2);
  assert_string_equal(model_of_batch(0), "a");
  assert_string_equal(model_of_batch(1), "b");
  run_batch(1, NULL);
  assert_int_equal(n_batches, 2); /* join waits for a */
  run_batch(0, NULL);
  assert_int_equal(n_batches, 3);
  assert_string_equal(model_of_batch(2), "join");
  assert_ptr_equal(input_of(batches[2].reqs[0], "IN")->data,
                   output_buffer(0, "OUT"));
  assert_ptr_equal(input_of(batches[2].reqs[0], "IN1")->data,
                   output_buffer(1, "OUT"));
  assert_int_equal(n_ens_answers, 0);
  run_batch(2, NULL);
  assert_int_equal(n_ens_answers, 1);
  assert_int_equal(ens_answers[0].error, 0);
  assert_int_equal(ens_answers[0].n_outputs, 3);
  assert_string_equal(ens_answers[0].names[0], "OUT");
  assert_string_equal(ens_answers[0].names[1], "OUT1");
  assert_string_equal(ens_answers[0].names[2], "MID");
  assert_true(ens_answers[0].first[1] == 5.0f);
  assert_int_equal(find("fan")->stats.compute_infer.ns, 600);
}

/* Asking for an output of a middle step runs only the steps it needs. */
static void test_pruned(void **state) {
  static const char *const outs[] = {"MID", NULL};
  ifd_request_t *r;
  (void)state;
  r = ens_submit_req("fan", "p0", 0, 9, 1, outs, NULL);
  assert_non_null(r);
  assert_int_equal(n_batches, 1);
  assert_string_equal(model_of_batch(0), "a");
  run_batch(0, NULL);
  assert_int_equal(n_batches, 1);
  assert_int_equal(n_ens_answers, 1);
  assert_int_equal(ens_answers[0].n_outputs, 1);
  assert_string_equal(ens_answers[0].names[0], "MID");
  assert_true(ens_answers[0].first[0] == 9.0f);
}

/* The first failing step fails the request at once with its error and
 * Triton's prefix; join never starts; b, still running, finishes and is
 * dropped; the ensemble counts one failure when b is released. */
static void test_failing_step(void **state) {
  ifd_request_t *r;
  ifd_model_t *fan;
  (void)state;
  r = ens_submit_req("fan", "x0", 0, 1, 1, NULL, NULL);
  assert_non_null(r);
  assert_int_equal(n_batches, 2);
  run_batch(0, "boom");
  assert_int_equal(n_ens_answers, 1);
  assert_int_equal(ens_answers[0].error, IFD_EINVAL);
  assert_string_equal(ens_answers[0].msg, "in ensemble 'fan', boom");
  fan = find("fan");
  assert_int_equal(fan->stats.fail.count, 0); /* b still runs */
  assert_int_equal(ifd_sched_model_ops()->pending(fan), 1);
  run_batch(1, NULL);
  assert_int_equal(n_batches, 2);
  assert_int_equal(n_ens_answers, 1);
  assert_int_equal(fan->stats.fail.count, 1);
  assert_int_equal(fan->stats.success.count, 0);
  assert_int_equal(fan->stats.execution_count, 0);
  assert_int_equal(find("b")->stats.success.count, 1);
  assert_int_equal(ifd_sched_model_ops()->pending(fan), 0);
}

/* A composing model unloaded after the ensemble loaded (explicit mode)
 * fails the request with core's error, prefixed; nothing is left running. */
static void test_missing_model(void **state) {
  ifd_request_t *r;
  ifd_errmsg_t err;
  ifd_model_t *m;
  (void)state;
  assert_int_equal(ifd_server_unload_model(server, "b", 1, 0, &err), 0);
  while (ifd_server_find_model(server, "b", 1, -1, &m, &err) == 0)
    uv_run(&loop, UV_RUN_ONCE);
  r = ens_submit_req("ens", "m0", 0, 1, 1, NULL, NULL);
  assert_non_null(r);
  run_batch(0, NULL);
  assert_int_equal(n_batches, 1);
  assert_int_equal(n_ens_answers, 1);
  assert_true(ens_answers[0].error < 0);
  assert_non_null(strstr(ens_answers[0].msg, "in ensemble 'ens', "));
  assert_non_null(strstr(ens_answers[0].msg, "'b'"));
  assert_int_equal(find("ens")->stats.fail.count, 1);
  assert_int_equal(ifd_sched_model_ops()->pending(find("ens")), 0);
}

/* The first step's model is gone: the failure comes while the ensemble
 * request is being submitted, so its answer waits for the end of this loop
 * iteration (no callback from inside ifd_request_submit). */
static void test_missing_first_step(void **state) {
  ifd_request_t *r;
  ifd_errmsg_t err;
  ifd_model_t *m;
  (void)state;
  assert_int_equal(ifd_server_unload_model(server, "a", 1, 0, &err), 0);
  while (ifd_server_find_model(server, "a", 1, -1, &m, &err) == 0)
    uv_run(&loop, UV_RUN_ONCE);
  r = ens_submit_req("ens", "m1", 0, 1, 1, NULL, NULL);
  assert_non_null(r); /* accepted: the answer comes on the loop */
  assert_int_equal(n_ens_answers, 0);
  pump();
  assert_int_equal(n_ens_answers, 1);
  assert_true(ens_answers[0].error < 0);
  assert_non_null(strstr(ens_answers[0].msg, "in ensemble 'ens', "));
  assert_int_equal(n_batches, 0);
  assert_int_equal(find("ens")->stats.fail.count, 1);
  assert_int_equal(ifd_sched_model_ops()->pending(find("ens")), 0);
}

/* A step batches with direct traffic in its model's dynamic batcher. */
static void test_batches_with_direct(void **state) {
  ifd_request_t *r;
  (void)state;
  r = ens_submit_req("ens_dyn", "e0", 0, 4, 1, NULL, NULL);
  assert_non_null(r);
  pump();
  assert_int_equal(n_batches, 0); /* waits for a preferred batch of 2 */
  submit("dyn", "direct", 1, 2, 0, 0, NULL);
  pump();
  BATCH(0, "e0", "direct");
  run_batch(0, NULL);
  assert_int_equal(n_ens_answers, 1);
  assert_answer(0, "direct", 0, NULL);
  assert_true(ens_answers[0].first[0] == 4.0f);
  assert_int_equal(find("dyn")->stats.success.count, 2);
  assert_int_equal(find("ens_dyn")->stats.success.count, 1);
}

/* Triton's reshape between an ensemble that does not batch and composing
 * models that do: [2] goes to "a" as [1, 2]; "b" gets a's [1, 2] as is;
 * the answer is [2] again. */
static void test_reshape_unbatched_ensemble(void **state) {
  ifd_request_t *r = ifd_request_new(server);
  int64_t shape[1] = {2};
  const ifd_input_t *in;
  ifd_input_t *pin;
  ifd_errmsg_t err;
  (void)state;
  r->model_name = "ens_nb";
  r->id = "nb";
  r->on_response = on_ens_response;
  pin = ifd_request_add_input(r, "IN", 2, IFD_TYPE_FP32, shape, 1);
  in_data[0][0] = 6;
  pin->data = in_data[0];
  pin->byte_size = 8;
  assert_int_equal(ifd_request_submit(r, &err), 0);
  in = input_of(batches[0].reqs[0], "IN");
  assert_int_equal(in->ndims, 2);
  assert_int_equal(in->shape[0], 1);
  assert_int_equal(in->shape[1], 2);
  assert_ptr_equal(in->data, in_data[0]);
  run_batch(0, NULL);
  in = input_of(batches[1].reqs[0], "IN");
  assert_int_equal(in->ndims, 2);
  assert_int_equal(in->shape[0], 1);
  run_batch(1, NULL);
  assert_int_equal(n_ens_answers, 1);
  assert_int_equal(ens_answers[0].error, 0);
  assert_int_equal(ens_answers[0].ndims[0], 1);
  assert_int_equal(ens_answers[0].dim0[0], 2);
  assert_true(ens_answers[0].first[0] == 6.0f);
  assert_int_equal(find("ens_nb")->stats.inference_count, 1);
}

/* An ensemble as a step of another: the inner one answers and releases
 * its request while the outer one still holds the inner response (whose
 * outputs point into the inner steps' buffers); everything ends once the
 * outer answer is freed. */
static void test_nested(void **state) {
  ifd_request_t *r;
  (void)state;
  r = ens_submit_req("outer", "n0", 0, 8, 1, NULL, NULL);
  assert_non_null(r);
  assert_string_equal(model_of_batch(0), "a"); /* ens's first step */
  run_batch(0, NULL);
  assert_string_equal(model_of_batch(1), "b");
  run_batch(1, NULL);
  assert_int_equal(n_batches, 3);
  assert_string_equal(model_of_batch(2), "a"); /* outer's second step */
  /* The inner request was released: counted, nothing pending there. */
  assert_int_equal(find("ens")->stats.success.count, 1);
  assert_int_equal(ifd_sched_model_ops()->pending(find("ens")), 0);
  assert_ptr_equal(input_of(batches[2].reqs[0], "IN")->data,
                   output_buffer(1, "OUT"));
  run_batch(2, NULL);
  assert_int_equal(n_ens_answers, 1);
  assert_int_equal(ens_answers[0].error, 0);
  assert_true(ens_answers[0].first[0] == 8.0f);
  assert_int_equal(find("outer")->stats.success.count, 1);
  assert_int_equal(find("outer")->stats.compute_infer.ns, 600);
  assert_int_equal(ifd_sched_model_ops()->pending(find("outer")), 0);
}

/* A step whose model answers in several responses: its outputs may come
 * before a flags-only FINAL; a second response with outputs (a decoupled
 * model streaming) fails the request: not supported yet. */
static void test_decoupled_step(void **state) {
  ifd_request_t *r;
  (void)state;
  r = ens_submit_req("ens", "d0", 0, 3, 1, NULL, NULL);
  assert_non_null(r);
  run_batch_decoupled(0, 1);
  assert_int_equal(n_batches, 2);
  run_batch(1, NULL);
  assert_int_equal(n_ens_answers, 1);
  assert_int_equal(ens_answers[0].error, 0);
  assert_true(ens_answers[0].first[0] == 3.0f);

  r = ens_submit_req("ens", "d1", 1, 4, 1, NULL, NULL);
  assert_non_null(r);
  run_batch_decoupled(2, 2);
  assert_int_equal(n_batches, 3);
  assert_int_equal(n_ens_answers, 2);
  assert_int_equal(ens_answers[1].error, IFD_EUNSUPPORTED);
  assert_non_null(
      strstr(ens_answers[1].msg, "to an ensemble that is not decoupled"));
  assert_int_equal(find("ens")->stats.fail.count, 1);
  assert_int_equal(ifd_sched_model_ops()->pending(find("ens")), 0);
}

/* Many requests in flight at once, answered in any order; executions are
 * reused from the free list. */
static void test_many(void **state) {
  char id[16];
  int i, k;
  (void)state;
  for (i = 0; i < 3; i++) {
    snprintf(id, sizeof(id), "m%d", i);
    assert_non_null(ens_submit_req("ens", id, i, (float)i, 1, NULL, NULL));
  }
  assert_int_equal(n_batches, 3);
  for (k = 2; k >= 0; k--) run_batch(k, NULL);
  assert_int_equal(n_batches, 6);
  for (k = 3; k < 6; k++) run_batch(k, NULL);
  assert_int_equal(n_ens_answers, 3);
  for (i = 0; i < 3; i++) {
    int j = 2 - i; /* answered in reverse */
    snprintf(id, sizeof(id), "m%d", j);
    assert_string_equal(ens_answers[i].id, id);
    assert_true(ens_answers[i].first[0] == (float)j);
  }
  assert_int_equal(find("ens")->stats.success.count, 3);
}

/* The ensemble unloads while a request runs: the scheduler stays until
 * that request ends (its steps still read the graph), then goes; the
 * request is answered and the server stops cleanly. */
/* An ensemble request cancelled cancels its steps: a running step's
 * backend sees the flag, and no further step starts after it; the
 * ensemble is answered CANCELLED once and counted as a failure. */
static void test_cancel_running_step(void **state) {
  ifd_request_t *r;
  ifd_model_t *ens;
  (void)state;
  r = ens_submit_req("ens", "k0", 0, 7, 1, NULL, NULL);
  assert_non_null(r);
  assert_int_equal(n_batches, 1);
  ifd_request_cancel(r);
  assert_true(ifd_request_is_cancelled(batches[0].reqs[0]));
  assert_int_equal(n_ens_answers, 0); /* the step runs on */
  run_batch(0, NULL);
  assert_int_equal(n_batches, 1); /* "b" never started */
  assert_int_equal(n_ens_answers, 1);
  assert_int_equal(ens_answers[0].error, IFD_ECANCELLED);
  ens = find("ens");
  assert_int_equal(ens->stats.fail.count, 1);
  assert_int_equal(ifd_sched_model_ops()->pending(ens), 0);
}

/* A step still queued when its ensemble request is cancelled is dropped:
 * its CANCELLED answer fails the ensemble request at once. */
static void test_cancel_queued_step(void **state) {
  ifd_request_t *r;
  ifd_model_t *ens;
  (void)state;
  fake_runq_waits = 1;
  r = ens_submit_req("ens", "k1", 0, 7, 1, NULL, NULL);
  assert_non_null(r);
  assert_int_equal(n_batches, 1);
  ifd_request_cancel(r);
  fake_runq_waits = 0;
  assert_true(batches[0].done); /* taken back before it ran */
  assert_int_equal(n_ens_answers, 1);
  assert_int_equal(ens_answers[0].error, IFD_ECANCELLED);
  ens = find("ens");
  assert_int_equal(ens->stats.fail.count, 1);
  assert_int_equal(find("a")->stats.fail.count, 1);
  assert_int_equal(ifd_sched_model_ops()->pending(ens), 0);
}

static void test_unload_in_flight(void **state) {
  ifd_request_t *r;
  ifd_model_t *ens = find("ens");
  const ifd_model_ops_t *ops = ifd_sched_model_ops();
  (void)state;
  r = ens_submit_req("ens", "u0", 0, 2, 1, NULL, NULL);
  assert_non_null(r);
  assert_int_equal(ops->pending(ens), 1);
  /* What the registry does to unload it (on the loop here: the unload
   * only pushes an event). */
  ens->state = IFD_MODEL_UNLOADING;
  ops->stop(ens);
  ops->unload(ens);
  pump();
  assert_non_null(ens->sched); /* kept for the request in flight */
  run_batch(0, NULL);
  run_batch(1, NULL);
  assert_int_equal(n_ens_answers, 1);
  assert_int_equal(ens_answers[0].error, 0);
  assert_true(ens_answers[0].first[0] == 2.0f);
  assert_null(ens->sched);            /* freed with the last execution */
  ens->state = IFD_MODEL_UNAVAILABLE; /* the registry's unload is done */
}

static int ens_setup(void **state) {
  n_ens_answers = 0;
  with_nb = 0;
  return setup(state);
}

static int ens_setup_nb(void **state) {
  n_ens_answers = 0;
  with_nb = 1;
  return setup(state);
}

/* The fixture's setup in explicit mode, every model loaded at start. */
static int ens_setup_explicit(void **state) {
  static const char *load[] = {"*"};
  static const char *repos[1];
  ifd_server_opts_t o;
  ifd_errmsg_t err;
  (void)state;
  n_ens_answers = 0;
  with_nb = 0;
  n_models = n_batches = n_freed = n_answers = 0;
  loaded = stopped = 0;
  make_repo();
  test_ops = *ifd_sched_model_ops();
  test_ops.load = test_load;
  memset(&o, 0, sizeof(o));
  repos[0] = root;
  o.repos = repos;
  o.n_repos = 1;
  o.ops = &test_ops;
  o.control_mode = IFD_CONTROL_EXPLICIT;
  o.load_models = load;
  o.n_load_models = 1;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_server_new(&loop, &o, &server, &err), 0);
  ifd_server_start(server, on_loaded, NULL);
  while (!loaded) uv_run(&loop, UV_RUN_ONCE);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_graph_chain),
      cmocka_unit_test(test_graph_fan),
      cmocka_unit_test(test_graph_refused),
      cmocka_unit_test_setup_teardown(test_chain, ens_setup, teardown),
      cmocka_unit_test_setup_teardown(test_chain_no_copy, ens_setup, teardown),
      cmocka_unit_test_setup_teardown(test_sequence_flags, ens_setup, teardown),
      cmocka_unit_test_setup_teardown(test_fan, ens_setup, teardown),
      cmocka_unit_test_setup_teardown(test_pruned, ens_setup, teardown),
      cmocka_unit_test_setup_teardown(test_failing_step, ens_setup, teardown),
      cmocka_unit_test_setup_teardown(test_missing_model, ens_setup_explicit,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_missing_first_step,
                                      ens_setup_explicit, teardown),
      cmocka_unit_test_setup_teardown(test_batches_with_direct, ens_setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_many, ens_setup, teardown),
      cmocka_unit_test_setup_teardown(test_nested, ens_setup, teardown),
      cmocka_unit_test_setup_teardown(test_decoupled_step, ens_setup, teardown),
      cmocka_unit_test_setup_teardown(test_reshape_unbatched_ensemble,
                                      ens_setup_nb, teardown),
      cmocka_unit_test_setup_teardown(test_cancel_running_step, ens_setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_cancel_queued_step, ens_setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_unload_in_flight, ens_setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

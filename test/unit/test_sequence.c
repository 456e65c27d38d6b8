/*
 * test/unit/test_sequence.c - the sequence batcher (sched/sequence.c,
 * sched/seq_batch.c), driven through the server on a real loop with the
 * fake backend of sched_fixture.h: which request goes to which instance and
 * batch position, the control inputs it carries, the backlog, the refusals,
 * idle release and unload. Time-based cases assert only lower bounds.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "base/log.h"
#include "sched_fixture.h"

#define CTL(name, kind)                         \
  "{ name: \"" name "\" control [{ kind: " kind \
  " int32_false_true: [0, 1] "                  \
  "}] }"

static void write_models(void) {
  /* Direct: 2 instances x 2 slots. */
  write_model("seqd",
              "max_batch_size: 2 instance_group [{ count: 2 }] "
              "sequence_batching { direct { } control_input [ " CTL(
                  "START", "CONTROL_SEQUENCE_START") ", " CTL("END",
                                                              "CONTROL_SEQUENCE_"
                                                              "END") ", " CTL("READY",
                                                                              "CONTROL_SEQUENCE_READY") ", "
                                                                                                        "{ name: \"CORRID\" control [{ kind: CONTROL_SEQUENCE_CORRID "
                                                                                                        "data_type: TYPE_UINT64 }] } ] }");
  /* Oldest: 1 instance, 3 candidates, batches of up to 2. */
  write_model("seqo",
              "max_batch_size: 2 instance_group [{ count: 1 }] "
              "sequence_batching { oldest { max_candidate_sequences: 3 } "
              "control_input [ " CTL("START", "CONTROL_SEQUENCE_START") " , "
              "{ name: \"CORRID\" control [{ kind: CONTROL_SEQUENCE_CORRID "
              "data_type: TYPE_STRING }] } ] }");
  /* Direct with a delay: a batch waits up to 100 ms for 2 of 4 slots. */
  write_model("seqw",
              "max_batch_size: 4 instance_group [{ count: 1 }] "
              "sequence_batching { direct { max_queue_delay_microseconds: "
              "100000 minimum_slot_utilization: 0.5 } control_input [ " CTL(
                  "READY", "CONTROL_SEQUENCE_READY") " ] }");
  /* For the randomized run: 2 instances x 2 slots, 20 ms idle limit. */
  write_model(
      "seqs",
      "max_batch_size: 2 instance_group [{ count: 2 }] "
      "sequence_batching { max_sequence_idle_microseconds: 20000 "
      "control_input [ " CTL("START", "CONTROL_SEQUENCE_START") ", " CTL(
          "END", "CONTROL_SEQUENCE_END") ", " CTL("READY",
                                                  "CONTROL_SEQUENCE_"
                                                  "READY") " ] }");
  /* Oldest with preserve_ordering. */
  write_model("seqp",
              "max_batch_size: 2 instance_group [{ count: 1 }] "
              "sequence_batching { oldest { max_candidate_sequences: 3 "
              "preserve_ordering: true } control_input [ " CTL(
                  "START", "CONTROL_SEQUENCE_START") " ] }");
  /* Iterative: 2 slots, 100 ms idle limit. */
  write_model("seqit",
              "max_batch_size: 2 instance_group [{ count: 1 }] "
              "sequence_batching { iterative_sequence: true "
              "max_sequence_idle_microseconds: 100000 control_input [ " CTL(
                  "START", "CONTROL_SEQUENCE_START") ", " CTL("READY",
                                                              "CONTROL_"
                                                              "SEQUENCE_"
                                                              "READY") " ] }");
  /* Short idle limit, one slot. */
  write_model("seqi",
              "max_batch_size: 0 instance_group [{ count: 1 }] "
              "sequence_batching { max_sequence_idle_microseconds: 50000 "
              "control_input [ " CTL("READY", "CONTROL_SEQUENCE_READY") " ] }");
}

/* Submits one row for sequence `corr` (or string `scorr`) with `flags`.
 * Returns the request, or NULL with the refusal's message in msg. */
static int next_cols = 4;        /* width of the next submitted row */
static uint64_t next_timeout_us; /* timeout of the next submitted request */

static ifd_request_t *seq_submit(const char *model, const char *id,
                                 uint64_t corr, const char *scorr,
                                 uint32_t flags, char *msg, size_t n) {
  ifd_request_t *req = ifd_request_new(server);
  int64_t shape[2] = {1, next_cols};
  ifd_input_t *in;
  ifd_errmsg_t err;
  int64_t *sh = shape;
  uint32_t nd = 2;

  assert_non_null(req);
  if (strcmp(model, "seqi") == 0) {
    sh = shape + 1; /* not batching: [4] */
    nd = 1;
  }
  req->model_name = model;
  req->id = ifd_pool_strndup(&req->pool, id, strlen(id));
  req->correlation_id = corr;
  if (scorr != NULL)
    req->correlation_id_str =
        ifd_pool_strndup(&req->pool, scorr, strlen(scorr));
  req->flags = flags;
  req->timeout_us = next_timeout_us;
  req->on_response = on_response;
  in = ifd_request_add_input(req, "IN", 2, IFD_TYPE_FP32, sh, nd);
  assert_non_null(in);
  in->data = zeros;
  in->byte_size = (uint64_t)next_cols * sizeof(float);
  if (ifd_request_submit(req, &err) < 0) {
    if (msg != NULL) snprintf(msg, n, "%s", err.text);
    ifd_request_unref(req);
    return NULL;
  }
  return req;
}

#define S IFD_REQUEST_FLAG_SEQUENCE_START
#define E IFD_REQUEST_FLAG_SEQUENCE_END

static const ifd_input_t *input(const ifd_request_t *r, const char *name) {
  uint32_t i;
  for (i = 0; i < r->n_inputs; i++)
    if (strcmp(r->inputs[i].name, name) == 0) return &r->inputs[i];
  return NULL;
}

static int32_t ctl(const ifd_request_t *r, const char *name) {
  const ifd_input_t *in = input(r, name);
  int32_t v;
  assert_non_null(in);
  assert_int_equal(in->dtype, IFD_TYPE_INT32);
  assert_int_equal(in->byte_size, 4);
  memcpy(&v, in->data, 4);
  return v;
}

static uint64_t corrid(const ifd_request_t *r) {
  const ifd_input_t *in = input(r, "CORRID");
  uint64_t v;
  assert_non_null(in);
  assert_int_equal(in->byte_size, 8);
  memcpy(&v, in->data, 8);
  return v;
}

/* Direct: sequences spread over the instances' slots, each batch holds a
 * request per busy slot at the slot's position, controls as Triton sets
 * them, and a fifth sequence waits for the first slot that frees. */
static void test_direct_slots(void **state) {
  char msg[1100];
  (void)state;
  assert_non_null(seq_submit("seqd", "a0", 11, NULL, S, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqd", "b0", 12, NULL, S, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqd", "c0", 13, NULL, S, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqd", "d0", 14, NULL, S, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqd", "e0", 15, NULL, S, msg, sizeof(msg)));
  assert_int_equal(n_batches, 0); /* formed at the iteration's end */
  pump();
  assert_int_equal(n_batches, 2);
  /* Slot 0 of each instance first, then slot 1. */
  assert_int_equal(batches[0].instance, 0);
  BATCH(0, "a0", "c0");
  assert_int_equal(batches[1].instance, 1);
  BATCH(1, "b0", "d0");
  assert_int_equal(ctl(batches[0].reqs[0], "START"), 1);
  assert_int_equal(ctl(batches[0].reqs[0], "END"), 0);
  assert_int_equal(ctl(batches[0].reqs[0], "READY"), 1);
  assert_int_equal(corrid(batches[0].reqs[1]), 13);
  /* The inputs have the request's shape [1, 1]. */
  assert_int_equal(input(batches[0].reqs[0], "START")->ndims, 2);

  /* Sequence 13 (slot 1 of instance 0) goes on; 11 has nothing: a null
   * request keeps 13 at position 1. */
  assert_non_null(seq_submit("seqd", "c1", 13, NULL, E, msg, sizeof(msg)));
  pump();
  assert_int_equal(n_batches, 2); /* instance 0 is busy */
  complete(0);
  assert_int_equal(n_batches, 3);
  assert_int_equal(batches[2].instance, 0);
  assert_int_equal(batches[2].n, 2);
  assert_true(batches[2].reqs[0]->null_req);
  assert_int_equal(ctl(batches[2].reqs[0], "READY"), 0);
  assert_int_equal(corrid(batches[2].reqs[0]), 0);
  assert_string_equal(batches[2].reqs[1]->id, "c1");
  assert_int_equal(ctl(batches[2].reqs[1], "END"), 1);
  assert_int_equal(ctl(batches[2].reqs[1], "START"), 0);
  /* END gave slot 1 of instance 0 to the backlogged sequence 15: its
   * START runs there once the instance is free. */
  complete(2);
  assert_int_equal(n_batches, 4);
  assert_int_equal(batches[3].instance, 0);
  assert_int_equal(batches[3].n, 2);
  assert_true(batches[3].reqs[0]->null_req);
  assert_string_equal(batches[3].reqs[1]->id, "e0");
  assert_int_equal(corrid(batches[3].reqs[1]), 15);
  /* The null requests got no answer; the real ones did. */
  assert_int_equal(n_answers, 3);
}

/* An instance may have a second batch queued while one runs, made of the
 * sequences the first does not hold; a sequence's next request waits for
 * its previous one to finish. */
static void test_pipelined_batches(void **state) {
  char msg[1100];
  (void)state;
  assert_non_null(seq_submit("seqd", "a0", 11, NULL, S, msg, sizeof(msg)));
  pump();
  assert_int_equal(n_batches, 1);
  assert_int_equal(batches[0].instance, 0);
  BATCH(0, "a0");
  /* 12 takes slot 0 of instance 1, 13 slot 1 of instance 0. */
  assert_non_null(seq_submit("seqd", "b0", 12, NULL, S, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqd", "c0", 13, NULL, S, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqd", "a1", 11, NULL, 0, msg, sizeof(msg)));
  pump();
  assert_int_equal(n_batches, 3);
  assert_int_equal(batches[1].instance, 0);
  assert_int_equal(batches[1].n, 2);
  assert_true(batches[1].reqs[0]->null_req); /* 11 is still running */
  assert_string_equal(batches[1].reqs[1]->id, "c0");
  assert_int_equal(batches[2].instance, 1);
  BATCH(2, "b0");
  complete(0);
  /* 11's next request goes once a0 is done; 13 still runs in batch 1. */
  assert_int_equal(n_batches, 4);
  assert_int_equal(batches[3].instance, 0);
  BATCH(3, "a1");
  assert_int_equal(ctl(batches[3].reqs[0], "START"), 0);
  complete(1);
  complete(2);
  complete(3);
  assert_int_equal(n_answers, 4);
}

/* oldest preserve_ordering: a backend answering the rows of a batch in
 * another order still has its responses delivered in batching order. */
static void test_oldest_preserve_ordering(void **state) {
  char msg[1100];
  batch_t *bt;
  ifd_response_t *r1, *r0;
  (void)state;
  assert_non_null(seq_submit("seqp", "p0", 1, NULL, S, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqp", "q0", 2, NULL, S, msg, sizeof(msg)));
  pump();
  assert_int_equal(n_batches, 1);
  BATCH(0, "p0", "q0");
  bt = &batches[0];
  r1 = ifd_response_new(bt->reqs[1]);
  r0 = ifd_response_new(bt->reqs[0]);
  assert_non_null(r1);
  assert_non_null(r0);
  ifd_response_send(r1, IFD_RESPONSE_FINAL, 0, NULL);
  pump();
  assert_int_equal(n_answers, 0); /* q0 waits for p0 */
  ifd_response_send(r0, IFD_RESPONSE_FINAL, 0, NULL);
  pump();
  assert_int_equal(n_answers, 2);
  assert_answer(0, "p0", 0, NULL);
  assert_answer(1, "q0", 0, NULL);
  bt->done = 1;
  ifd_request_release(bt->reqs[0], 1);
  ifd_request_release(bt->reqs[1], 1);
  model_of(bt->m)->idle(bt->m, bt->instance, 1, bt->n, model_of(bt->m)->arg);
  pump();
}

/* Rows of other shapes than the batch's first (IN has dims [-1], no
 * allow_ragged_batch) do not join it: direct puts a null request in their
 * slot and runs them next; oldest leaves them for a later batch. */
static void test_shapes_must_agree(void **state) {
  char msg[1100];
  (void)state;
  next_cols = 4;
  assert_non_null(seq_submit("seqd", "a0", 11, NULL, S, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqd", "b0", 12, NULL, S, msg, sizeof(msg)));
  next_cols = 3;
  assert_non_null(seq_submit("seqd", "c0", 13, NULL, S, msg, sizeof(msg)));
  pump();
  /* Instance 0: a0 in slot 0; c0 (slot 1) has other shapes. */
  assert_int_equal(n_batches, 2);
  assert_int_equal(batches[0].instance, 0);
  BATCH(0, "a0");
  assert_int_equal(batches[1].instance, 1);
  BATCH(1, "b0");
  complete(0);
  /* Now c0 is the first: slot 0 has nothing, so a null request. */
  assert_int_equal(n_batches, 3);
  assert_int_equal(batches[2].n, 2);
  assert_true(batches[2].reqs[0]->null_req);
  assert_int_equal(batches[2].reqs[0]->inputs[0].shape[1], 3);
  assert_string_equal(batches[2].reqs[1]->id, "c0");

  /* Oldest: p (4 wide) and q (3 wide) do not share a batch. */
  next_cols = 4;
  assert_non_null(seq_submit("seqo", "p0", 0, "p", S, msg, sizeof(msg)));
  next_cols = 3;
  assert_non_null(seq_submit("seqo", "q0", 0, "q", S, msg, sizeof(msg)));
  next_cols = 4;
  assert_non_null(seq_submit("seqo", "r0", 0, "r", S, msg, sizeof(msg)));
  pump();
  assert_int_equal(n_batches, 4);
  BATCH(3, "p0", "r0");
  complete(3);
  assert_int_equal(n_batches, 5);
  BATCH(4, "q0");
  next_cols = 4;
}

/* Triton's refusals, with its messages; none reaches a batch. */
static void test_refusals(void **state) {
  char msg[1100];
  (void)state;
  assert_null(seq_submit("seqd", "x", 0, NULL, S, msg, sizeof(msg)));
  assert_string_equal(msg,
                      "inference request to model 'seqd' must specify a "
                      "non-zero or non-empty correlation ID");
  assert_null(seq_submit("seqd", "x", 77, NULL, 0, msg, sizeof(msg)));
  assert_string_equal(msg,
                      "inference request for sequence 77 to model 'seqd' must "
                      "specify the START flag on the first request of the "
                      "sequence");
  assert_null(seq_submit("seqd", "x", 77, NULL, E, msg, sizeof(msg)));
  assert_non_null(strstr(msg, "must specify the START flag"));
  /* A string ID for a UINT64 CORRID, an integer one for a STRING CORRID. */
  assert_null(seq_submit("seqd", "x", 0, "abc", S, msg, sizeof(msg)));
  assert_non_null(
      strstr(msg, "correlation ID in request is not an unsigned int"));
  assert_null(seq_submit("seqo", "x", 5, NULL, S, msg, sizeof(msg)));
  assert_non_null(strstr(msg, "correlation ID in request is not a string"));
  assert_null(seq_submit("seqo", "x", 0, "", S, msg, sizeof(msg)));
  assert_non_null(strstr(msg, "non-zero or non-empty"));
  /* After END the ID is unknown again. */
  assert_non_null(seq_submit("seqd", "y0", 78, NULL, S | E, msg, sizeof(msg)));
  assert_null(seq_submit("seqd", "y1", 78, NULL, 0, msg, sizeof(msg)));
  assert_non_null(strstr(msg, "sequence 78"));
  pump();
  assert_int_equal(n_batches, 1);
  BATCH(0, "y0");
  assert_int_equal(ctl(batches[0].reqs[0], "START"), 1);
  assert_int_equal(ctl(batches[0].reqs[0], "END"), 1);
}

/* Oldest: the oldest ready requests, one per sequence, up to the batch
 * size; a sequence's next request waits for its previous one; CORRID is
 * the string ID as one BYTES element. */
static void test_oldest(void **state) {
  char msg[1100];
  const ifd_input_t *in;
  uint32_t len;
  (void)state;
  assert_non_null(seq_submit("seqo", "p0", 0, "p", S, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqo", "p1", 0, "p", 0, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqo", "q0", 0, "q", S, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqo", "r0", 0, "r", S, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqo", "s0", 0, "s", S, msg, sizeof(msg)));
  pump();
  assert_int_equal(n_batches, 1);
  BATCH(0, "p0", "q0");
  in = input(batches[0].reqs[1], "CORRID");
  assert_non_null(in);
  assert_int_equal(in->dtype, IFD_TYPE_BYTES);
  assert_int_equal(in->byte_size, 5);
  memcpy(&len, in->data, 4);
  assert_int_equal(len, 1);
  assert_memory_equal((const char *)in->data + 4, "q", 1);
  complete(0);
  /* p's next request (older than r0) could go only after p0 finished; s
   * has no candidate place (3 at most): it waits in the backlog. */
  assert_int_equal(n_batches, 2);
  BATCH(1, "p1", "r0");
  complete(1);
  assert_int_equal(n_batches, 2);
  assert_int_equal(n_answers, 4);
}

/* A sequence idle past its limit is released: its ID needs START again,
 * and the backlogged sequence behind it gets the slot. */
static void test_idle_release(void **state) {
  char msg[1100];
  uint64_t t0;
  (void)state;
  assert_non_null(seq_submit("seqi", "i0", 5, NULL, S, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqi", "j0", 6, NULL, S, msg, sizeof(msg)));
  pump();
  assert_int_equal(n_batches, 1);
  BATCH(0, "i0");
  t0 = uv_hrtime();
  complete(0);
  /* j waits in the backlog (one slot) until 5 has been idle 50 ms. */
  while (n_batches < 2) uv_run(&loop, UV_RUN_ONCE);
  assert_true(uv_hrtime() - t0 >= 40 * 1000000ull);
  BATCH(1, "j0");
  assert_int_equal(ctl(batches[1].reqs[0], "READY"), 1);
  assert_null(seq_submit("seqi", "i1", 5, NULL, 0, msg, sizeof(msg)));
  assert_non_null(strstr(msg, "sequence 5 to model 'seqi'"));
}

/* minimum_slot_utilization with a queue delay: one ready slot of four
 * waits for the delay, two go at once. */
static void test_direct_delay(void **state) {
  char msg[1100];
  uint64_t t0;
  (void)state;
  t0 = uv_hrtime();
  assert_non_null(seq_submit("seqw", "w0", 1, NULL, S, msg, sizeof(msg)));
  pump();
  assert_int_equal(n_batches, 0);
  while (n_batches < 1) uv_run(&loop, UV_RUN_ONCE);
  assert_true(uv_hrtime() - t0 >= 90 * 1000000ull);
  BATCH(0, "w0");
  complete(0);
  assert_non_null(seq_submit("seqw", "x0", 2, NULL, S, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqw", "w1", 1, NULL, 0, msg, sizeof(msg)));
  pump();
  assert_int_equal(n_batches, 2);
  BATCH(1, "w1", "x0");
}

/* A randomized run (fixed seed, bounded) through every path at once:
 * STARTs, restarts, ENDs, unknown IDs, the backlog, idle releases, two
 * batches out per instance, unload with work queued. Every accepted request
 * is answered exactly once (teardown checks "once"), and under ASan nothing
 * is used after it is freed or leaked. Batches of an instance finish in
 * their order, as an instance thread runs them. */
static void test_randomized(void **state) {
  char msg[1100], id[32];
  unsigned seed = 12345;
  int step, accepted = 0, waits = 0, k;
  (void)state;
  if (getenv("SEQ_VERBOSE") != NULL) ifd_log_set_verbose(1);
  for (step = 0; step < 700 && n_batches < MAX_BATCHES - 64; step++) {
    unsigned r = (seed = seed * 1103515245u + 12345u) >> 16;
    unsigned op = r % 10;
    if (op < 6 && accepted < 700) {
      uint32_t flags = 0;
      if (r / 10 % 10 < 3) flags |= S;
      if (r / 100 % 10 < 2) flags |= E;
      snprintf(id, sizeof(id), "r%d", step);
      if (seq_submit("seqs", id, 1 + r / 1000 % 12, NULL, flags, msg,
                     sizeof(msg)) != NULL)
        accepted++;
      if (r / 7 % 3 == 0) pump();
    } else if (op < 9) {
      /* The oldest unfinished batch of a random instance. */
      uint32_t inst = r / 10 % 2;
      for (k = 0; k < n_batches; k++)
        if (!batches[k].done && batches[k].instance == inst) {
          complete(k);
          break;
        }
    } else if (waits < 6) {
      waits++;
      wait_ms(25); /* idle sequences are released */
    }
  }
  /* Finish what runs (finishing may dispatch more), then unload. */
  for (;;) {
    int any = 0;
    pump();
    for (k = 0; k < n_batches; k++)
      if (!batches[k].done) {
        complete(k);
        any = 1;
        break;
      }
    if (!any) break;
  }
  shutdown_all();
  assert_true(accepted > 100);
  assert_int_equal(n_answers, accepted);
}

/* A request's timeout bounds how long its sequence waits in the backlog:
 * past it, its requests are refused (UNAVAILABLE, Triton's words) and the
 * ID is unknown again; a sequence that holds a slot is not affected. */
static void test_backlog_timeout(void **state) {
  char msg[1100];
  uint64_t t0 = uv_hrtime();
  (void)state;
  next_timeout_us = 30000;
  assert_non_null(seq_submit("seqi", "h0", 5, NULL, S, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqi", "k0", 6, NULL, S, msg, sizeof(msg)));
  next_timeout_us = 0;
  assert_non_null(seq_submit("seqi", "k1", 6, NULL, 0, msg, sizeof(msg)));
  pump();
  assert_int_equal(n_batches, 1); /* h0 runs (and stays running) */
  BATCH(0, "h0");
  /* Bounded: without the expiry nothing would ever answer them. */
  while (n_answers < 2 && uv_hrtime() - t0 < 5000 * 1000000ull)
    uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(n_answers, 2);
  assert_true(uv_hrtime() - t0 >= 25 * 1000000ull);
  assert_answer(0, "k0", IFD_EUNAVAIL,
                "timeout of the corresponding sequence has been expired");
  assert_answer(1, "k1", IFD_EUNAVAIL, "has been expired");
  assert_null(seq_submit("seqi", "k2", 6, NULL, 0, msg, sizeof(msg)));
  assert_non_null(strstr(msg, "sequence 6 to model 'seqi'"));
  complete(0);
  assert_answer(2, "h0", 0, NULL);
}

/* The answer of request `id`, in whatever order answers came. */
static void assert_answered(const char *id, int error, const char *msg) {
  int i;
  for (i = 0; i < n_answers; i++)
    if (strcmp(answers[i].id, id) == 0) {
      assert_answer(i, id, error, msg);
      return;
    }
  fail_msg("no answer for '%s'", id);
}

/* Cancelling a queued request cancels its sequence, as Triton does: in a
 * slot, the requests ahead of it run, then it and every later one are
 * answered CANCELLED when it comes next, the slot goes to the backlog and
 * the ID is unknown again; in the backlog, the whole sequence is answered
 * CANCELLED at once. */
static void test_cancel_sequence(void **state) {
  char msg[1100];
  ifd_request_t *h2, *k1;
  (void)state;
  assert_non_null(seq_submit("seqi", "h0", 5, NULL, S, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqi", "h1", 5, NULL, 0, msg, sizeof(msg)));
  h2 = seq_submit("seqi", "h2", 5, NULL, 0, msg, sizeof(msg));
  assert_non_null(h2);
  assert_non_null(seq_submit("seqi", "h3", 5, NULL, 0, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqi", "k0", 6, NULL, S, msg, sizeof(msg)));
  k1 = seq_submit("seqi", "k1", 6, NULL, 0, msg, sizeof(msg));
  assert_non_null(k1);
  assert_non_null(seq_submit("seqi", "m0", 7, NULL, S | E, msg, sizeof(msg)));
  pump();
  assert_int_equal(n_batches, 1);
  BATCH(0, "h0");
  /* Backlogged sequence 6: answered at once, 7 stays in the backlog. */
  ifd_request_cancel(k1);
  pump();
  assert_int_equal(n_answers, 2);
  assert_answer(0, "k0", IFD_ECANCELLED, "Request was cancelled");
  assert_answer(1, "k1", IFD_ECANCELLED, "Request was cancelled");
  assert_null(seq_submit("seqi", "k2", 6, NULL, 0, msg, sizeof(msg)));
  assert_non_null(strstr(msg, "sequence 6 to model 'seqi' must specify"));
  /* Sequence 5 in the slot: h1 is ahead of the cancelled h2, so it runs. */
  ifd_request_cancel(h2);
  pump();
  assert_int_equal(n_answers, 2);
  complete(0);
  assert_answer(2, "h0", 0, NULL);
  assert_int_equal(n_batches, 2);
  BATCH(1, "h1");
  complete(1);
  assert_int_equal(n_answers, 6);
  assert_answered("h1", 0, NULL);
  assert_answered("h2", IFD_ECANCELLED, "Request was cancelled");
  assert_answered("h3", IFD_ECANCELLED, "Request was cancelled");
  /* The slot went to sequence 7; 5 is unknown again. */
  assert_int_equal(n_batches, 3);
  BATCH(2, "m0");
  assert_null(seq_submit("seqi", "h4", 5, NULL, 0, msg, sizeof(msg)));
  assert_non_null(strstr(msg, "sequence 5 to model 'seqi' must specify"));
  assert_non_null(seq_submit("seqi", "n0", 5, NULL, S | E, msg, sizeof(msg)));
  complete(2);
  assert_int_equal(n_batches, 4);
  BATCH(3, "n0");
  complete(3);
  assert_int_equal(n_answers, 8);
}

/* Oldest: a cancelled request at the head of a candidate sequence ends it
 * when its previous request finishes; the other candidates go on. */
static void test_cancel_sequence_oldest(void **state) {
  char msg[1100];
  ifd_request_t *x1;
  (void)state;
  assert_non_null(seq_submit("seqo", "x0", 0, "x", S, msg, sizeof(msg)));
  x1 = seq_submit("seqo", "x1", 0, "x", 0, msg, sizeof(msg));
  assert_non_null(x1);
  assert_non_null(seq_submit("seqo", "x2", 0, "x", E, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqo", "y0", 0, "y", S, msg, sizeof(msg)));
  pump();
  assert_int_equal(n_batches, 1);
  BATCH(0, "x0", "y0");
  assert_non_null(seq_submit("seqo", "y1", 0, "y", E, msg, sizeof(msg)));
  ifd_request_cancel(x1);
  pump();
  complete(0);
  assert_int_equal(n_answers, 4);
  assert_answered("x0", 0, NULL);
  assert_answered("y0", 0, NULL);
  assert_answered("x1", IFD_ECANCELLED, "Request was cancelled");
  assert_answered("x2", IFD_ECANCELLED, "Request was cancelled");
  assert_int_equal(n_batches, 2);
  BATCH(1, "y1");
  complete(1);
  assert_int_equal(n_answers, 5);
  assert_null(seq_submit("seqo", "x3", 0, "x", 0, msg, sizeof(msg)));
  assert_non_null(strstr(msg, "must specify the START flag"));
}

/* Unload with sequences live and requests queued: the queued ones are
 * answered with an error, nothing waits. */
/* ---- iterative sequences (request rescheduling) ---------------------------
 */

#define ALL IFD_RELEASE_ALL
#define RESCHED IFD_RELEASE_RESCHEDULE

/* Executes batch k as a backend would, request i released with flags[i]:
 * ALL after a FINAL response, RESCHEDULE without a response, 0 not at all
 * (the backend keeps it); then the instance reports itself idle. */
static void run_batch(int k, const uint32_t *flags) {
  batch_t *b = &batches[k];
  loaded_t *l = model_of(b->m);
  uint32_t i;
  assert_false(b->done);
  b->done = 1;
  for (i = 0; i < b->n; i++) {
    if (b->reqs[i]->null_req || flags[i] == 0) continue;
    if (flags[i] == ALL) {
      ifd_response_t *resp = ifd_response_new(b->reqs[i]);
      assert_non_null(resp);
      ifd_response_send(resp, IFD_RESPONSE_FINAL, 0, NULL);
    }
    ifd_request_release(b->reqs[i], flags[i]);
  }
  l->idle(b->m, b->instance, 1, b->n, l->arg);
  pump();
}

/* iterative_sequence: a request without a correlation ID starts a sequence
 * of its own (IDs 1, 2, ... as Triton gives them); released with
 * RESCHEDULE it runs again in its slot, neither START nor END, with its
 * statistics counted per execution; released for good it ends its
 * sequence, and the slot goes to the backlog. */
static void test_iterative_reschedule(void **state) {
  char msg[1100];
  ifd_request_t *a, *b;
  static const uint32_t resched_all[] = {RESCHED, ALL};
  static const uint32_t resched[] = {RESCHED};
  static const uint32_t all[] = {ALL, ALL};
  (void)state;
  a = seq_submit("seqit", "a", 0, NULL, 0, msg, sizeof(msg));
  b = seq_submit("seqit", "b", 0, NULL, 0, msg, sizeof(msg));
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(seq_submit("seqit", "c", 0, NULL, 0, msg, sizeof(msg)));
  assert_int_equal(a->correlation_id, 1);
  assert_int_equal(b->correlation_id, 2);
  pump();
  assert_int_equal(n_batches, 1);
  BATCH(0, "a", "b");
  assert_int_equal(ctl(batches[0].reqs[0], "START"), 1);
  /* a again, alone in slot 0 (READY false for the null request in 1)...
   * and b's release freed slot 1 for c, in the same batch. */
  run_batch(0, resched_all);
  assert_int_equal(n_answers, 1);
  assert_answer(0, "b", 0, NULL);
  assert_int_equal(n_batches, 2);
  BATCH(1, "a", "c");
  assert_int_equal(ctl(batches[1].reqs[0], "START"), 0);
  assert_int_equal(ctl(batches[1].reqs[0], "READY"), 1);
  assert_int_equal(ctl(batches[1].reqs[1], "START"), 1);
  assert_int_equal(batches[1].reqs[1]->correlation_id, 3);
  /* The control inputs were added once per execution, not accumulated. */
  assert_int_equal(a->n_inputs, 3);
  run_batch(1, resched_all);
  assert_int_equal(n_batches, 3);
  assert_int_equal(batches[2].n, 1);
  BATCH(2, "a");
  /* This execution the backend reports (TRITONBACKEND_ModelInstance
   * ReportStatistics): it counts as a request, as in Triton. */
  a->t_exec_start = a->t_compute_start = uv_hrtime();
  a->t_compute_end = a->t_exec_end = a->t_exec_start + 1000;
  a->stat_success = 1;
  a->stat_reported = 1;
  run_batch(2, resched);
  BATCH(3, "a");
  run_batch(3, all);
  assert_int_equal(n_answers, 3);
  assert_answer(2, "a", 0, NULL);
  /* Every sequence ended: both slots take new ones. */
  assert_non_null(seq_submit("seqit", "d", 0, NULL, 0, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqit", "e", 0, NULL, 0, msg, sizeof(msg)));
  pump();
  BATCH(4, "d", "e");
  run_batch(4, all);
  assert_int_equal(n_answers, 5);
  /* Five requests counted as they ended, and a's one reported rescheduled
   * execution; the others reported nothing and count nothing. */
  assert_int_equal(batches[0].m->stats.success.count, 6);
  assert_int_equal(batches[0].m->stats.fail.count, 0);
}

/* A model without iterative_sequence refuses a RESCHEDULE release with
 * Triton's words; so does an iterative sequence that ended while its
 * request was out (idle timeout), with the batcher's words for a request
 * without START. */
static void test_iterative_reschedule_refused(void **state) {
  char msg[1100];
  static const uint32_t resched[] = {RESCHED};
  static const uint32_t keep[] = {0};
  ifd_request_t *r;
  (void)state;
  assert_non_null(seq_submit("seqi", "x", 5, NULL, S, msg, sizeof(msg)));
  pump();
  BATCH(0, "x");
  run_batch(0, resched);
  assert_int_equal(n_answers, 1);
  assert_answer(0, "x", IFD_EINVAL,
                "Request is released with "
                "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is "
                "not configured to handle such a flag.");
  r = seq_submit("seqit", "y", 0, NULL, 0, msg, sizeof(msg));
  assert_non_null(r);
  pump();
  BATCH(1, "y");
  run_batch(1, keep); /* the backend holds it past the idle limit */
  wait_ms(150);
  ifd_request_release(r, RESCHED);
  pump();
  assert_int_equal(n_answers, 2);
  assert_answer(1, "y", IFD_EINVAL,
                "inference request for sequence 1 to model 'seqit' must "
                "specify the START flag on the first request of the sequence");
}

/* A request cancelled while it executes and then rescheduled is answered
 * CANCELLED instead of running again, and its slot is free. */
static void test_iterative_cancel(void **state) {
  char msg[1100];
  static const uint32_t resched[] = {RESCHED};
  static const uint32_t all[] = {ALL};
  ifd_request_t *r;
  (void)state;
  r = seq_submit("seqit", "z", 0, NULL, 0, msg, sizeof(msg));
  assert_non_null(r);
  pump();
  BATCH(0, "z");
  ifd_request_cancel(r);
  run_batch(0, resched);
  assert_int_equal(n_answers, 1);
  assert_answer(0, "z", IFD_ECANCELLED, "Request was cancelled");
  assert_int_equal(n_batches, 1);
  assert_non_null(seq_submit("seqit", "w", 0, NULL, 0, msg, sizeof(msg)));
  pump();
  BATCH(1, "w");
  run_batch(1, all);
  assert_answer(1, "w", 0, NULL);
}

static void test_unload_in_flight(void **state) {
  char msg[1100];
  (void)state;
  assert_non_null(seq_submit("seqi", "u0", 5, NULL, S, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqi", "u1", 5, NULL, 0, msg, sizeof(msg)));
  assert_non_null(seq_submit("seqi", "v0", 6, NULL, S, msg, sizeof(msg)));
  pump();
  assert_int_equal(n_batches, 1);
  shutdown_all(); /* completes batch 0 first, then unloads */
  assert_int_equal(n_answers, 3);
  assert_answer(0, "u0", 0, NULL);
  /* u1 was dispatched when u0 finished, before the unload, or refused. */
  assert_int_equal(n_batches + (n_answers - n_batches), 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_direct_slots, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pipelined_batches, setup, teardown),
      cmocka_unit_test_setup_teardown(test_shapes_must_agree, setup, teardown),
      cmocka_unit_test_setup_teardown(test_oldest_preserve_ordering, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
      cmocka_unit_test_setup_teardown(test_oldest, setup, teardown),
      cmocka_unit_test_setup_teardown(test_idle_release, setup, teardown),
      cmocka_unit_test_setup_teardown(test_direct_delay, setup, teardown),
      cmocka_unit_test_setup_teardown(test_backlog_timeout, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cancel_sequence, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cancel_sequence_oldest, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_unload_in_flight, setup, teardown),
      cmocka_unit_test_setup_teardown(test_iterative_reschedule, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_iterative_reschedule_refused, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_iterative_cancel, setup, teardown),
      cmocka_unit_test_setup_teardown(test_randomized, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test/unit/test_cache.c - the response cache's core (core/cache.c): the
 * entry format (build, full compare, a hit's response reading the entry in
 * place), what the key covers (model, version, inputs in any order, shapes,
 * parameters, requested outputs; not the request id), a 64-bit hash
 * collision that must not hit, the local cache's LRU eviction within its
 * byte budget, an entry larger than the cache, and the cache's settings.
 * The request path is covered end to end by test/e2e/test_response_cache.py.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache.h"
#include "core/infer.h"
#include "core/model.h"
#include "core/request_internal.h"

static ifd_model_t model_a = {.name = "ma", .version = 1};
static ifd_model_t model_b = {.name = "mb", .version = 1};
static ifd_model_t model_a2 = {.name = "ma", .version = 2};

static const int32_t data1[4] = {1, 2, 3, 4};
static const int32_t data2[4] = {1, 2, 3, 5};
static const int64_t shape14[2] = {1, 4};
static const int64_t shape41[2] = {4, 1};

/* A request of `m` with INPUT0 (and INPUT1 when `two`, added first or
 * last per `swap`). */
static ifd_request_t *req_of(ifd_model_t *m, const int32_t *d,
                             const int64_t *shape, int two, int swap) {
  ifd_request_t *r = ifd_request_new(NULL);
  ifd_input_t *in;
  assert_non_null(r);
  r->model = m;
  if (two && swap) {
    in = ifd_request_add_input(r, "INPUT1", 6, IFD_TYPE_INT32, shape14, 2);
    in->data = data1;
    in->byte_size = 16;
  }
  in = ifd_request_add_input(r, "INPUT0", 6, IFD_TYPE_INT32, shape, 2);
  assert_non_null(in);
  in->data = d;
  in->byte_size = 16;
  if (two && !swap) {
    in = ifd_request_add_input(r, "INPUT1", 6, IFD_TYPE_INT32, shape14, 2);
    in->data = data1;
    in->byte_size = 16;
  }
  return r;
}

static void req_free(ifd_request_t *r) {
  r->model = NULL;
  ifd_request_unref(r);
}

/* A response of `r` with OUTPUT0 = `d` (4 INT32) in its pool. */
static ifd_response_t *resp_of(ifd_request_t *r, const int32_t *d) {
  ifd_response_t *resp = ifd_response_new(r);
  ifd_output_t *o;
  int64_t *sh;
  void *buf;
  assert_non_null(resp);
  o = ifd_pool_alloc(&resp->pool, sizeof(*o));
  sh = ifd_pool_alloc(&resp->pool, 2 * sizeof(int64_t));
  buf = ifd_pool_alloc(&resp->pool, 16);
  memset(o, 0, sizeof(*o));
  sh[0] = 1;
  sh[1] = 4;
  memcpy(buf, d, 16);
  o->name = "OUTPUT0";
  o->dtype = IFD_TYPE_INT32;
  o->shape = sh;
  o->ndims = 2;
  o->buffer = buf;
  o->byte_size = 16;
  o->buffer_in_pool = 1;
  resp->outputs = o;
  resp->n_outputs = 1;
  return resp;
}

static void resp_free(ifd_response_t *resp) {
  ifd_request_t *r = resp->req;
  atomic_fetch_sub(&ifd__req(r)->open_responses, 1);
  ifd_response_free(resp);
}

static void test_roundtrip_in_place(void **state) {
  ifd_request_t *r = req_of(&model_a, data1, shape14, 1, 0);
  ifd_request_t *r2 = req_of(&model_a, data1, shape14, 1, 0);
  ifd_response_t *resp = resp_of(r, data2), *hit;
  ifd_cache_blob_t *b;
  (void)state;

  b = ifd_cache_blob_build(r, resp);
  assert_non_null(b);
  assert_true(ifd_cache_blob_matches(b, r));
  assert_true(ifd_cache_blob_matches(b, r2));
  ifd_cache_blob_ref(b);
  hit = ifd_response_new(r2);
  assert_int_equal(ifd_cache_blob_respond(b, hit), 0);
  assert_int_equal(hit->n_outputs, 1);
  assert_string_equal(hit->outputs[0].name, "OUTPUT0");
  assert_int_equal(hit->outputs[0].dtype, IFD_TYPE_INT32);
  assert_int_equal(hit->outputs[0].ndims, 2);
  assert_int_equal(hit->outputs[0].shape[1], 4);
  assert_int_equal(hit->outputs[0].byte_size, 16);
  assert_memory_equal(hit->outputs[0].buffer, data2, 16);
  /* In place: the tensor is inside the entry, 16-byte aligned. */
  assert_true((unsigned char *)hit->outputs[0].buffer > b->data &&
              (unsigned char *)hit->outputs[0].buffer < b->data + b->size);
  assert_int_equal((uintptr_t)hit->outputs[0].buffer % 16, 0);
  assert_int_equal(atomic_load(&b->refs), 2);
  resp_free(hit); /* drops the hit's reference through keep */
  assert_int_equal(atomic_load(&b->refs), 1);
  ifd_cache_blob_unref(b);
  resp_free(resp);
  req_free(r);
  req_free(r2);
}

static void test_key_covers(void **state) {
  ifd_request_t *base = req_of(&model_a, data1, shape14, 1, 0);
  ifd_request_t *swapped = req_of(&model_a, data1, shape14, 1, 1);
  ifd_request_t *other_data = req_of(&model_a, data2, shape14, 1, 0);
  ifd_request_t *other_shape = req_of(&model_a, data1, shape41, 1, 0);
  ifd_request_t *other_model = req_of(&model_b, data1, shape14, 1, 0);
  ifd_request_t *other_version = req_of(&model_a2, data1, shape14, 1, 0);
  ifd_request_t *with_param = req_of(&model_a, data1, shape14, 1, 0);
  ifd_request_t *with_output = req_of(&model_a, data1, shape14, 1, 0);
  ifd_request_t *with_id = req_of(&model_a, data1, shape14, 1, 0);
  ifd_response_t *resp = resp_of(base, data1);
  ifd_cache_blob_t *b = ifd_cache_blob_build(base, resp);
  ifd_param_t *p;
  uint64_t h = ifd_cache_key_hash(base);
  (void)state;

  p = ifd_request_add_param(with_param, "x", 1);
  p->type = IFD_PARAM_INT;
  p->v.i = 1;
  assert_non_null(ifd_request_add_output(with_output, "OUTPUT0", 7));
  with_id->id = "another id";

  assert_non_null(b);
  /* Input order does not matter; the id is not part of the key. */
  assert_int_equal(ifd_cache_key_hash(swapped), h);
  assert_true(ifd_cache_blob_matches(b, swapped));
  assert_int_equal(ifd_cache_key_hash(with_id), h);
  assert_true(ifd_cache_blob_matches(b, with_id));
  /* Everything else is. */
  ifd_request_t *differ[] = {other_data,    other_shape, other_model,
                             other_version, with_param,  with_output};
  for (size_t i = 0; i < sizeof(differ) / sizeof(differ[0]); i++) {
    assert_int_not_equal(ifd_cache_key_hash(differ[i]), h);
    assert_false(ifd_cache_blob_matches(b, differ[i]));
  }
  ifd_cache_blob_unref(b);
  resp_free(resp);
  req_free(base);
  req_free(swapped);
  for (size_t i = 0; i < sizeof(differ) / sizeof(differ[0]); i++)
    req_free(differ[i]);
  req_free(with_id);
}

/* Two requests whose keys share a 64-bit hash (forced here): the local
 * cache finds the entry by hash, and the full compare refuses it. */
static void test_collision_is_a_miss(void **state) {
  ifd_request_t *r1 = req_of(&model_a, data1, shape14, 0, 0);
  ifd_request_t *r2 = req_of(&model_a, data2, shape14, 0, 0);
  ifd_response_t *resp = resp_of(r1, data1);
  ifd_cache_blob_t *b = ifd_cache_blob_build(r1, resp), *got = NULL;
  ifd_cache_impl_t impl;
  (void)state;

  assert_int_equal(ifd_cache_local_impl(1 << 20, &impl), 0);
  assert_int_equal(impl.insert(impl.self, 42, NULL, b), 0);
  assert_int_equal(impl.lookup(impl.self, 42, NULL, &got), 0);
  assert_ptr_equal(got, b);
  assert_true(ifd_cache_blob_matches(got, r1));
  assert_false(ifd_cache_blob_matches(got, r2));
  ifd_cache_blob_unref(got);
  assert_int_equal(impl.lookup(impl.self, 43, NULL, &got), IFD_ENOTFOUND);
  impl.destroy(impl.self);
  ifd_cache_blob_unref(b);
  resp_free(resp);
  req_free(r1);
  req_free(r2);
}

static ifd_cache_blob_t *blob_of(uint64_t size) {
  ifd_cache_blob_t *b = ifd_cache_blob_new(size);
  assert_non_null(b);
  memset(b->data, 0, size);
  return b;
}

static int has(ifd_cache_impl_t *impl, uint64_t h) {
  ifd_cache_blob_t *got = NULL;
  if (impl->lookup(impl->self, h, NULL, &got) != 0) return 0;
  ifd_cache_blob_unref(got);
  return 1;
}

static void test_lru_eviction(void **state) {
  ifd_cache_impl_t impl;
  ifd_cache_blob_t *b[4];
  int i;
  (void)state;
  assert_int_equal(ifd_cache_local_impl(300, &impl), 0);
  for (i = 0; i < 4; i++) b[i] = blob_of(100);
  for (i = 0; i < 3; i++)
    assert_int_equal(impl.insert(impl.self, (uint64_t)i + 1, NULL, b[i]), 0);
  /* 1 was used last of the first three: 2 is the oldest now. */
  assert_true(has(&impl, 1));
  assert_int_equal(impl.insert(impl.self, 4, NULL, b[3]), 0);
  assert_true(has(&impl, 1));
  assert_false(has(&impl, 2));
  assert_true(has(&impl, 3));
  assert_true(has(&impl, 4));
  /* An entry larger than the whole cache is not inserted and evicts
   * nothing. */
  ifd_cache_blob_t *big = blob_of(301);
  assert_int_equal(impl.insert(impl.self, 9, NULL, big), IFD_ETOOBIG);
  assert_false(has(&impl, 9));
  assert_true(has(&impl, 3));
  ifd_cache_blob_unref(big);
  /* The cache's references go with it; ours stay valid. */
  impl.destroy(impl.self);
  for (i = 0; i < 4; i++) {
    assert_int_equal(atomic_load(&b[i]->refs), 1);
    ifd_cache_blob_unref(b[i]);
  }
}

static void test_many_entries_grow(void **state) {
  ifd_cache_impl_t impl;
  uint64_t i;
  (void)state;
  assert_int_equal(ifd_cache_local_impl(1 << 20, &impl), 0);
  for (i = 0; i < 1000; i++) {
    ifd_cache_blob_t *b = blob_of(16);
    assert_int_equal(impl.insert(impl.self, i * 7919, NULL, b), 0);
    ifd_cache_blob_unref(b);
  }
  for (i = 0; i < 1000; i++) assert_true(has(&impl, i * 7919));
  impl.destroy(impl.self);
}

static void test_settings(void **state) {
  const char *k[] = {"size"}, *v_ok[] = {"1048576"}, *v_bad[] = {"12x"},
             *v_neg[] = {"-5"};
  ifd_cache_t *c = NULL;
  ifd_errmsg_t err;
  ifd_cache_stats_t st;
  (void)state;
  assert_int_equal(ifd_cache_new("local", k, v_ok, 1, NULL, &c, &err), 0);
  assert_false(ifd_cache_needs_open(c));
  ifd_cache_stats(c, &st);
  assert_true(st.local);
  assert_int_equal(st.capacity, 1048576);
  ifd_cache_free(c);
  assert_int_equal(ifd_cache_new("local", k, v_bad, 1, NULL, &c, &err),
                   IFD_EINVAL);
  assert_non_null(strstr(err.text, "12x"));
  assert_int_equal(ifd_cache_new("local", k, v_neg, 1, NULL, &c, &err),
                   IFD_EINVAL);
  assert_int_equal(ifd_cache_new("local", NULL, NULL, 0, NULL, &c, &err),
                   IFD_EINVAL);
  assert_non_null(strstr(err.text, "size"));
  /* Another name is a plugin, opened later (on the pool). */
  assert_int_equal(ifd_cache_new("redis", k, v_ok, 1, "/nowhere", &c, &err), 0);
  assert_true(ifd_cache_needs_open(c));
  ifd_cache_free(c);
}

/* An entry a plugin gave back damaged is refused, never read past. */
static void test_damaged_entry(void **state) {
  ifd_request_t *r = req_of(&model_a, data1, shape14, 0, 0);
  ifd_response_t *resp = resp_of(r, data1), *hit;
  ifd_cache_blob_t *b = ifd_cache_blob_build(r, resp), *cut;
  (void)state;
  for (uint64_t n = 0; n < b->size; n += 8) {
    cut = ifd_cache_blob_new(n);
    memcpy(cut->data, b->data, n);
    if (ifd_cache_blob_matches(cut, r)) {
      hit = ifd_response_new(r);
      /* A truncated response section fails to parse. */
      assert_int_equal(ifd_cache_blob_respond(cut, hit), IFD_EPARSE);
      atomic_fetch_sub(&ifd__req(r)->open_responses, 1);
      ifd_response_free(hit);
    } else {
      ifd_cache_blob_unref(cut);
    }
  }
  ifd_cache_blob_unref(b);
  resp_free(resp);
  req_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roundtrip_in_place),
      cmocka_unit_test(test_key_covers),
      cmocka_unit_test(test_collision_is_a_miss),
      cmocka_unit_test(test_lru_eviction),
      cmocka_unit_test(test_many_entries_grow),
      cmocka_unit_test(test_settings),
      cmocka_unit_test(test_damaged_entry),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

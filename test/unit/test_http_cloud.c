/*
 * test/unit/test_http_cloud.c - the SageMaker and Vertex AI routers
 * (frontend/http_cloud.c) on the answers they give themselves: the binary media
 * type's JSON size and Triton's errors for it, unknown paths, the
 * multi-model routes, redirects that reach no route, headers too long. The
 * answers that go on to a KServe v2 handler are the e2e tests' (test/e2e/
 * test_sagemaker.py, test_vertex_ai.py): none of these reaches one, so no
 * front end is needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/bufpool.h"
#include "frontend/internal.h"

static const ifd_http_cloud_t sagemaker = {.kind = IFD_HTTP_CLOUD_SAGEMAKER,
                                           .model = "m"};
static const ifd_http_cloud_t vertex = {.kind = IFD_HTTP_CLOUD_VERTEX_AI,
                                        .model = "m",
                                        .predict_route = "/predict",
                                        .health_route = "/health"};

/* Dispatches one message; returns the whole answer as text (free it). */
static char *answer(const ifd_http_cloud_t *c, ifd_http_method_t method,
                    const char *path, const char *body,
                    const ifd_http_cloud_hdrs_t *hdrs) {
  ifd_http_slot_t *s = calloc(1, sizeof(*s));
  ifd_http_msg_t msg;
  size_t n = 0, at = 0;
  char *out;

  s->t.iov = s->t.iov_inline;
  s->t.keep_alive = 1;
  memset(&msg, 0, sizeof(msg));
  msg.method = method;
  msg.path = path;
  msg.path_len = strlen(path);
  if (body != NULL) {
    /* As the transport hands it: from the shared buffer pool. */
    msg.body_len = strlen(body);
    msg.body = ifd_bufpool_get(ifd_bufpool_shared(), msg.body_len + 1);
    assert_non_null(msg.body);
    memcpy(msg.body, body, msg.body_len + 1);
  }
  msg.cloud = hdrs;
  ifd__http_cloud_dispatch(NULL, c, s, &msg);
  assert_null(msg.body); /* taken */
  assert_true(s->t.ready);
  for (unsigned i = 0; i < s->t.niov; i++) n += s->t.iov[i].len;
  out = malloc(n + 1);
  for (unsigned i = 0; i < s->t.niov; i++) {
    memcpy(out + at, s->t.iov[i].base, s->t.iov[i].len);
    at += s->t.iov[i].len;
  }
  out[n] = '\0';
  ifd__http_slot_free(s);
  return out;
}

#define ASSERT_ANSWER(text, expect)    \
  do {                                 \
    char *t_ = (text);                 \
    assert_string_equal(t_, (expect)); \
    free(t_);                          \
  } while (0)

#define ASSERT_HAS(text, needle)                          \
  do {                                                    \
    char *t_ = (text);                                    \
    if (strstr(t_, (needle)) == NULL) fail_msg("%s", t_); \
    free(t_);                                             \
  } while (0)

static ifd_http_cloud_hdrs_t ctype(const char *v) {
  ifd_http_cloud_hdrs_t h;
  memset(&h, 0, sizeof(h));
  h.has_ctype = 1;
  h.ctype_len = strlen(v);
  memcpy(h.ctype, v, h.ctype_len);
  return h;
}

static ifd_http_cloud_hdrs_t redirect_to(const char *v) {
  ifd_http_cloud_hdrs_t h;
  memset(&h, 0, sizeof(h));
  h.has_redirect = 1;
  h.redirect_len = strlen(v);
  memcpy(h.redirect, v, h.redirect_len);
  return h;
}

static void test_unknown_paths(void **state) {
  (void)state;
  ASSERT_ANSWER(
      answer(&sagemaker, IFD_HTTP_GET, "/v2/health/ready", NULL, NULL),
      "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
  ASSERT_ANSWER(answer(&sagemaker, IFD_HTTP_POST, "/pingx", "{}", NULL),
                "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
  ASSERT_ANSWER(answer(&vertex, IFD_HTTP_POST, "/invocations", "{}", NULL),
                "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
  ASSERT_ANSWER(answer(&vertex, IFD_HTTP_GET, "/predictx", NULL, NULL),
                "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
}

static void test_binary_media_type(void **state) {
  ifd_http_cloud_hdrs_t h;
  (void)state;
  h = ctype(
      "text/plain; application/vnd.sagemaker-triton.binary+json;"
      "json-header-size=1");
  ASSERT_HAS(answer(&sagemaker, IFD_HTTP_POST, "/invocations", "{}", &h),
             "expect MIME type for binary data starts with "
             "'application/vnd.sagemaker-triton.binary+json;json-header-"
             "size=', got: text/plain");
  h = ctype("application/vnd.sagemaker-triton.binary+json;json-header-size=3");
  ASSERT_HAS(answer(&sagemaker, IFD_HTTP_POST, "/invocations", "{}", &h),
             "HTTP/1.1 400 Bad Request\r\n");
  h = ctype("application/vnd.sagemaker-triton.binary+json;json-header-size=3");
  ASSERT_HAS(answer(&sagemaker, IFD_HTTP_POST, "/invocations", "{}", &h),
             "inference header size should be in range (0, 2), got: 3");
  h = ctype("application/vnd.vertex-ai-triton.binary+json;json-header-size=-2");
  ASSERT_HAS(answer(&vertex, IFD_HTTP_POST, "/predict", "{}", &h),
             "inference header size should be in range (0, 2), got: -2");
  /* Huge sizes do not overflow. */
  h = ctype(
      "application/vnd.vertex-ai-triton.binary+json;json-header-size="
      "99999999999999999999999999");
  ASSERT_HAS(answer(&vertex, IFD_HTTP_POST, "/predict", "{}", &h),
             "inference header size should be in range (0, 2)");
}

static void test_multi_model_routes(void **state) {
  (void)state;
  ASSERT_ANSWER(answer(&sagemaker, IFD_HTTP_GET, "/models", NULL, NULL),
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                "Content-Length: 13\r\n\r\n{\"models\":[]}");
  ASSERT_HAS(answer(&sagemaker, IFD_HTTP_GET, "/models/", NULL, NULL),
             "{\"models\":[]}");
  ASSERT_ANSWER(answer(&sagemaker, IFD_HTTP_GET, "/models/a", NULL, NULL),
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
  ASSERT_ANSWER(
      answer(&sagemaker, IFD_HTTP_POST, "/models/a/invoke", "{}", NULL),
      "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
  ASSERT_ANSWER(answer(&sagemaker, IFD_HTTP_DELETE, "/models/a", NULL, NULL),
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
  /* A load's body is read first: Triton's errors for a bad one. */
  ASSERT_HAS(answer(&sagemaker, IFD_HTTP_POST, "/models", "{nope", NULL),
             "HTTP/1.1 400 Bad Request\r\n");
  ASSERT_HAS(answer(&sagemaker, IFD_HTTP_POST, "/models",
                    "{\"model_name\":\"a\",\"url\":3}", NULL),
             "attempt to access JSON non-string as string");
  ASSERT_HAS(answer(&sagemaker, IFD_HTTP_POST, "/models/a",
                    "{\"model_name\":\"a\"}", NULL),
             "needs a 'model_name' and a 'url'");
  ASSERT_ANSWER(answer(&sagemaker, IFD_HTTP_OTHER, "/models", NULL, NULL),
                "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
  /* Not the pattern: an unknown path. */
  ASSERT_ANSWER(answer(&sagemaker, IFD_HTTP_GET, "/models/a/b", NULL, NULL),
                "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
  /* The pattern's slash is optional: "/modelsx" names model "x". */
  ASSERT_ANSWER(answer(&sagemaker, IFD_HTTP_GET, "/modelsx", NULL, NULL),
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
}

static void test_redirects_reaching_nothing(void **state) {
  ifd_http_cloud_hdrs_t h;
  (void)state;
  h = redirect_to("v2/health/ready");
  ASSERT_ANSWER(answer(&vertex, IFD_HTTP_GET, "/predict", NULL, &h),
                "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n");
  h = redirect_to("v2/logging");
  ASSERT_ANSWER(answer(&vertex, IFD_HTTP_POST, "/predict", "{}", &h),
                "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
  h = redirect_to("v2/models/m/generate");
  ASSERT_ANSWER(answer(&vertex, IFD_HTTP_POST, "/predict", "{}", &h),
                "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
  h = redirect_to("/v2/health/ready");
  ASSERT_ANSWER(answer(&vertex, IFD_HTTP_POST, "/predict", NULL, &h),
                "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
  h = redirect_to("");
  ASSERT_ANSWER(answer(&vertex, IFD_HTTP_POST, "/predict", NULL, &h),
                "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
  /* A redirected infer reads the Vertex AI media type. */
  h = redirect_to("v2/models/m/infer");
  h.has_ctype = 1;
  strcpy(h.ctype,
         "application/vnd.vertex-ai-triton.binary+json;json-header-size=9");
  h.ctype_len = strlen(h.ctype);
  ASSERT_HAS(answer(&vertex, IFD_HTTP_POST, "/predict", "{}", &h),
             "inference header size should be in range (0, 2), got: 9");
}

static void test_header_too_long(void **state) {
  ifd_http_cloud_hdrs_t h;
  (void)state;
  memset(&h, 0, sizeof(h));
  h.too_long = 1;
  ASSERT_HAS(answer(&vertex, IFD_HTTP_POST, "/predict", "{}", &h),
             "HTTP/1.1 400 Bad Request\r\n");
  ASSERT_HAS(answer(&sagemaker, IFD_HTTP_POST, "/invocations", "{}", &h),
             "longer than 1024 bytes");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unknown_paths),
      cmocka_unit_test(test_binary_media_type),
      cmocka_unit_test(test_multi_model_routes),
      cmocka_unit_test(test_redirects_reaching_nothing),
      cmocka_unit_test(test_header_too_long),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

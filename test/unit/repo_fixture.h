/*
 * test/unit/repo_fixture.h - a temporary model repository for the unit
 * tests that run a server on fake model operations (test_server.c,
 * test_registry.c, test_grpc_service.c): `root` names the folder (the test
 * creates it with mkdtemp), the helpers write into it and remove it.
 * Include after cmocka.h.
 */
#ifndef IFD_TEST_REPO_FIXTURE_H
#define IFD_TEST_REPO_FIXTURE_H

#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

static char root[64];

/* Writes `text` to <root>/<rel>. */
static inline void write_file(const char *rel, const char *text) {
  char path[512];
  FILE *f;
  snprintf(path, sizeof(path), "%s/%s", root, rel);
  f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* Creates the folder <root>/<rel> (its parent must exist). */
static inline void mkdirs(const char *rel) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", root, rel);
  assert_int_equal(mkdir(path, 0755), 0);
}

static inline int rm_one(const char *p, const struct stat *st, int fl,
                         struct FTW *f) {
  (void)st;
  (void)fl;
  (void)f;
  return remove(p);
}

#endif

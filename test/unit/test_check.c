/*
 * test/unit/test_check.c - base/check.h: ALWAYS/NEVER keep their value in
 * every build; in a checking build (IFD_CHECKS=1) a broken invariant
 * aborts, in a release build it does not.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/check.h"

static int calls;
static int touch(int v) {
  calls++;
  return v;
}

static void test_values(void **state) {
  (void)state;
  assert_int_equal(ALWAYS(1), 1);
  assert_int_equal(NEVER(0), 0);
  calls = 0;
  assert_int_equal(ALWAYS(touch(7) == 7), 1);
  assert_int_equal(NEVER(touch(3) == 4), 0);
  /* The condition of ALWAYS/NEVER is evaluated once in every build. */
  assert_int_equal(calls, 2);
  IFD_ASSERT(calls == 2);
}

/* Runs `which` in a child; returns its wait status. */
static int in_child(int which) {
  pid_t pid = fork();
  int st = 0;
  if (pid == 0) {
    /* Quiet: the expected abort's message is not a test failure. */
    if (freopen("/dev/null", "w", stderr) == NULL) _exit(3);
    if (which == 0) IFD_ASSERT(which == 1);
    if (which == 1 && NEVER(which == 1)) _exit(4);
    if (which == 2 && !ALWAYS(which == 3)) _exit(5);
    _exit(0);
  }
  assert_true(pid > 0);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  return st;
}

static void test_broken(void **state) {
  (void)state;
  for (int w = 0; w < 3; w++) {
    int st = in_child(w);
    if (IFD_CHECKS) {
      assert_true(WIFSIGNALED(st));
      assert_int_equal(WTERMSIG(st), SIGABRT);
    } else {
      /* Release: the assert is gone, the defensive branch runs. */
      assert_true(WIFEXITED(st));
      assert_int_equal(WEXITSTATUS(st), w == 0 ? 0 : w + 3);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_values),
      cmocka_unit_test(test_broken),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

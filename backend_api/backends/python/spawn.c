/*
 * backend_api/backends/python/spawn.c - starting a stub process and reaping
 * it: the process alone, with no instance behind it, so that the auto-complete
 * stub (python.c) and an instance's stubs (proc.c) start and end alike.
 *
 * The child gets its socket and the two shared-memory segments on the fixed
 * descriptors of ipc.h, dup2'd from copies at 10 or above so that none
 * clobbers another.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

/* A copy of fd at 10 or above: the child's dup2 onto 3..5 cannot clobber
 * it. -1 on failure. */
static int high_fd(int fd) {
  return fcntl(fd, F_DUPFD_CLOEXEC, 10);
}

/* The launch through an execution environment's bin/activate, as Triton's
 * ("source <env>/bin/activate && exec env LD_LIBRARY_PATH=<env>/lib:...");
 * the paths travel as arguments, never inside the script's text. */
static const char env_script[] =
    ". \"$1/bin/activate\" && "
    "export LD_LIBRARY_PATH=\"$1/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\" "
    "INFERD_PYTHON_EXECUTION_ENV=\"$1\" && shift && exec \"$@\"";

int ifd__py_spawn(const char *stub_path, const char *backend_dir,
                  const char *model, const char *inst, const char *env_dir,
                  int down_fd, int up_fd, pid_t *pid, int *sock, char *msg,
                  size_t msg_len) {
  int sv[2] = {-1, -1}, down = -1, up = -1, child = -1, rc;
  posix_spawn_file_actions_t fa;
  msg[0] = '\0';
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    snprintf(msg, msg_len, "socketpair: %s", strerror(errno));
    goto out;
  }
  down = high_fd(down_fd);
  up = high_fd(up_fd);
  child = high_fd(sv[1]);
  if (down < 0 || up < 0 || child < 0) {
    snprintf(msg, msg_len, "fcntl: %s", strerror(errno));
    goto out;
  }
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, child, IFD_PY_SOCK_FD);
  posix_spawn_file_actions_adddup2(&fa, down, IFD_PY_DOWN_FD);
  posix_spawn_file_actions_adddup2(&fa, up, IFD_PY_UP_FD);
  /* The model and instance names only name the process (ps, tests). */
  char *argv[] = {(char *)stub_path, (char *)backend_dir, (char *)model,
                  (char *)inst, NULL};
  char *env_argv[] = {"bash",
                      "-c",
                      (char *)env_script,
                      "triton_python_backend_stub",
                      (char *)env_dir,
                      (char *)stub_path,
                      (char *)backend_dir,
                      (char *)model,
                      (char *)inst,
                      NULL};
  if (env_dir != NULL)
    rc = posix_spawnp(pid, "bash", &fa, NULL, env_argv, environ);
  else
    rc = posix_spawn(pid, stub_path, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    snprintf(msg, msg_len, "cannot start %s: %s", stub_path, strerror(rc));
    goto out;
  }
  *sock = sv[0];
  sv[0] = -1;
out:
  if (sv[0] >= 0) close(sv[0]);
  if (sv[1] >= 0) close(sv[1]);
  if (child >= 0) close(child);
  if (down >= 0) close(down);
  if (up >= 0) close(up);
  return msg[0] != '\0' ? -1 : 0;
}

void ifd__py_reap(pid_t pid, int wait_ms, char *how, size_t n) {
  int st = 0;
  pid_t r = 0;
  snprintf(how, n, "unknown status");
  if (pid <= 0) return;
  for (int waited = 0; waited < wait_ms; waited += 5) {
    r = waitpid(pid, &st, WNOHANG);
    if (r != 0) break;
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  if (r == 0) {
    kill(pid, SIGKILL);
    while ((r = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
      ;
  }
  if (r < 0) return;
  if (WIFSIGNALED(st))
    snprintf(how, n, "killed by signal %d", WTERMSIG(st));
  else if (WIFEXITED(st))
    snprintf(how, n, "exit status %d", WEXITSTATUS(st));
}

/*
 * test/fuzz/replay.c - runs a fuzz target's LLVMFuzzerTestOneInput on files,
 * without libFuzzer: the normal (gcc, ASan) builds link each target with
 * this main and `make test-unit` replays the seed corpus and the crash
 * reproducers (test/fuzz/corpus/<target>, test/fuzz/regress/<target>) as a
 * regression test.
 *
 *   replay_<target> PATH...   each PATH a file or a folder of files
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf = NULL;
  size_t n = 0, cap = 0, k;

  if (f == NULL) {
    perror(path);
    return -1;
  }
  for (;;) {
    if (n == cap) {
      uint8_t *p;
      cap = cap != 0 ? cap * 2 : 4096;
      p = realloc(buf, cap);
      if (p == NULL) break;
      buf = p;
    }
    k = fread(buf + n, 1, cap - n, f);
    if (k == 0) break;
    n += k;
  }
  fclose(f);
  /* An exact-size copy, so that ASan sees a read past the end. */
  {
    uint8_t *exact = malloc(n != 0 ? n : 1);
    if (exact == NULL) {
      free(buf);
      return -1;
    }
    if (n != 0) memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
  }
  return 0;
}

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
  int i, n_files = 0, rc = 0;

  for (i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) continue; /* an absent folder: nothing */
    if (!S_ISDIR(st.st_mode)) {
      rc |= run_file(argv[i]);
      n_files++;
      continue;
    }
    {
      DIR *d = opendir(argv[i]);
      struct dirent *e;
      char **names = NULL;
      size_t n = 0, cap = 0, k;
      if (d == NULL) continue;
      while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
          cap = cap != 0 ? cap * 2 : 64;
          names = realloc(names, cap * sizeof(*names));
          if (names == NULL) abort();
        }
        names[n] = malloc(strlen(argv[i]) + strlen(e->d_name) + 2);
        if (names[n] == NULL) abort();
        sprintf(names[n], "%s/%s", argv[i], e->d_name);
        n++;
      }
      closedir(d);
      qsort(names, n, sizeof(*names), cmp);
      for (k = 0; k < n; k++) {
        rc |= run_file(names[k]);
        n_files++;
        free(names[k]);
      }
      free(names);
    }
  }
  printf("%s: %d input(s) replayed\n", argv[0], n_files);
  return rc != 0;
}

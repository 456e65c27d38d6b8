/*
 * sched/seq_init.c - the implicit states of a sequence model at load time:
 * sequence_batching `state [...]` validated as Triton validates it, and each
 * state's initial value built (the value START gives a sequence).
 *
 * Triton's rules (sequence_batch_scheduler.cc GenerateInitialStateData and
 * sequence_state.cc, 2.47), with its messages:
 *  - at most one initial_state per state; it needs a name, the state's
 *    data_type, as many dims as the state, none of them -1, each equal to the
 *    state's where that one is fixed, and zero_data or data_file;
 *  - a data_file is read from <model dir>/initial_state/ and must hold at
 *    least the value's bytes (a longer file gives its first bytes, as in
 *    Triton; logged); a BYTES file is taken whole;
 *  - use_growable_memory needs use_same_buffer_for_input_output and GPU
 *    instances;
 *  - without initial_state the value is zeros (BYTES: empty strings) in the
 *    state's dims, a -1 dim taken as 1: Triton starts a variable-size state
 *    at size 1 and the backend's StateUpdate sets its shape from then on.
 *
 * inferd refuses a few configs Triton loads with a warning or takes without
 * a look, because each would give a backend an input it cannot use: a state
 * without input_name, output_name or data_type, a dim below 1 other than -1,
 * more dims than IFD_MAX_DIMS, an input_name or output_name used by two
 * states (Triton keeps one of them, which one is unspecified), a BYTES
 * data_file that does not hold the value's element count in Triton's
 * length-prefixed format, and a data_file path that is absolute or climbs out
 * of initial_state/ with "..".
 *
 * Runs on the thread pool (reads files), never on the loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"
#include "base/log.h"
#include "sched/internal.h"

typedef Inference__ModelSequenceBatching__State state_cfg_t;
typedef Inference__ModelSequenceBatching__InitialState init_cfg_t;

/* A data_file name stays inside initial_state/: relative, no ".." part. */
static int path_is_inside(const char *p) {
  const char *s = p;
  if (p[0] == '\0' || p[0] == '/') return 0;
  while (*s != '\0') {
    const char *e = strchr(s, '/');
    size_t n = e != NULL ? (size_t)(e - s) : strlen(s);
    if (n == 2 && s[0] == '.' && s[1] == '.') return 0;
    s += n;
    if (*s == '/') s++;
  }
  return 1;
}

/*
 * Reads `path` into b->data: the first b->size bytes for a fixed-size type
 * (the file may be longer), or the whole file into a new blob for BYTES
 * (*bp replaced). Returns 0, or IFD_EINVAL / IFD_EIO / IFD_ENOMEM with err.
 */
static int read_data_file(const char *path, const char *file, const char *input,
                          int whole, ifd_blob_t **bp /* IN/OUT */,
                          ifd_errmsg_t *err) {
  struct stat stbuf;
  uint64_t want, got = 0;
  ifd_blob_t *b = *bp;
  int rc = 0;
  int fd;

  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return ifd_errf(err, IFD_EIO, "failed to open text file for read %s: %s",
                    path, strerror(errno));
  if (fstat(fd, &stbuf) != 0) {
    rc = ifd_errf(err, IFD_EIO, "failed to read text file %s: %s", path,
                  strerror(errno));
    goto out_close;
  }
  if (!S_ISREG(stbuf.st_mode)) {
    rc = ifd_errf(err, IFD_EIO, "failed to read text file %s: %s", path,
                  "not a regular file");
    goto out_close;
  }
  if (whole) {
    ifd_blob_t *nb = ifd_blob_new((uint64_t)stbuf.st_size, 0);
    if (nb == NULL) {
      rc = ifd_errf(err, IFD_ENOMEM, "out of memory reading %s for state '%s'",
                    path, input);
      goto out_close;
    }
    nb->dtype = b->dtype;
    nb->ndims = b->ndims;
    memcpy(nb->shape, b->shape, sizeof(b->shape));
    ifd_blob_unref(b);
    *bp = b = nb;
  } else if ((uint64_t)stbuf.st_size < b->size) {
    rc = ifd_errf(err, IFD_EINVAL,
                  "initial_state setting expects %" PRIu64
                  " bytes, but the data provided from %s only has %" PRIu64
                  " bytes.",
                  b->size, file, (uint64_t)stbuf.st_size);
    goto out_close;
  } else if ((uint64_t)stbuf.st_size > b->size) {
    IFD_WARN("initial_state data_file %s of state '%s' has %" PRIu64
             " bytes: its first %" PRIu64 " are used",
             path, input, (uint64_t)stbuf.st_size, b->size);
  }
  want = b->size;
  while (got < want) {
    size_t chunk = want - got > (1u << 30) ? (1u << 30) : (size_t)(want - got);
    ssize_t n = read(fd, b->data + got, chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      rc = ifd_errf(err, IFD_EIO, "failed to read text file %s: %s", path,
                    n < 0 ? strerror(errno) : "file shrank while read");
      goto out_close;
    }
    got += (uint64_t)n;
  }
out_close:
  close(fd);
  return rc;
}

/* The checks of one state that do not look at its initial_state. */
static int check_state(const ifd_model_t *m,
                       const Inference__ModelSequenceBatching *sb, size_t k,
                       ifd_errmsg_t *err) {
  const ifd_model_config_t *cfg = m->config;
  const state_cfg_t *st = sb->state[k];
  size_t i;

  if (st->input_name == NULL || st->input_name[0] == '\0')
    return ifd_errf(err, IFD_EINVAL,
                    "sequence batching state %zu must specify 'input_name' "
                    "for %s",
                    k, m->name);
  if (st->output_name == NULL || st->output_name[0] == '\0')
    return ifd_errf(err, IFD_EINVAL,
                    "sequence batching state '%s' must specify 'output_name' "
                    "for %s",
                    st->input_name, m->name);
  if (strcmp(ifd_dtype_name((ifd_dtype_t)st->data_type), "INVALID") == 0)
    return ifd_errf(err, IFD_EINVAL,
                    "sequence batching state '%s' must specify 'data_type' "
                    "for %s",
                    st->input_name, m->name);
  if (st->n_dims + 1 > IFD_MAX_DIMS)
    return ifd_errf(err, IFD_EINVAL,
                    "sequence batching state '%s' has %zu dims, at most %d "
                    "are supported, for %s",
                    st->input_name, st->n_dims, IFD_MAX_DIMS - 1, m->name);
  for (i = 0; i < st->n_dims; i++)
    if (st->dims[i] < 1 && st->dims[i] != -1)
      return ifd_errf(err, IFD_EINVAL,
                      "sequence batching state '%s' dimension must be "
                      "integer >= 1, or -1 to indicate a variable-size "
                      "dimension for %s",
                      st->input_name, m->name);
  for (i = 0; i < k; i++) {
    if (strcmp(sb->state[i]->input_name, st->input_name) == 0)
      return ifd_errf(err, IFD_EINVAL,
                      "State input name '%s' specified more than once.",
                      st->input_name);
    if (strcmp(sb->state[i]->output_name, st->output_name) == 0)
      return ifd_errf(err, IFD_EINVAL,
                      "State output name '%s' specified more than once.",
                      st->output_name);
  }
  if (st->use_growable_memory) {
    if (!st->use_same_buffer_for_input_output)
      return ifd_errf(err, IFD_EINVAL,
                      "In order to 'use_growable_memory', you must also "
                      "enable 'use_single_buffer' for state input name '%s'.",
                      st->input_name);
    for (i = 0; i < cfg->n_instance_group; i++)
      if (cfg->instance_group[i]->kind !=
          INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_GPU)
        return ifd_errf(
            err, IFD_EINVAL,
            "'use_growable_memory' can only work with KIND_GPU model "
            "instances right now. Please either change the instance type to "
            "KIND_GPU or set 'use_growable_memory' to false for state input "
            "'%s'.",
            st->input_name);
  }
  if (st->n_initial_state > 1)
    return ifd_errf(err, IFD_EINVAL,
                    "initial_state field for state input '%s' must contain "
                    "exactly one or zero element. Found '%zu' elements.",
                    st->input_name, st->n_initial_state);
  return 0;
}

/* The initial value of state `st`: a new blob in *out, or an error. */
static int build_state(const ifd_model_t *m, const state_cfg_t *st,
                       ifd_blob_t **out, ifd_errmsg_t *err) {
  const init_cfg_t *in = st->n_initial_state == 1 ? st->initial_state[0] : NULL;
  const int batching = m->config->max_batch_size > 0;
  ifd_dtype_t dtype = (ifd_dtype_t)st->data_type;
  int64_t shape[IFD_MAX_DIMS], count = 0, size = 0;
  uint32_t ndims = 0;
  ifd_blob_t *b;
  char *path = NULL;
  int rc;
  size_t i;

  *out = NULL;
  if (batching) shape[ndims++] = 1;
  if (in == NULL) {
    for (i = 0; i < st->n_dims; i++)
      shape[ndims++] = st->dims[i] == -1 ? 1 : st->dims[i];
  } else {
    if (in->data_type != st->data_type)
      return ifd_errf(err, IFD_EINVAL,
                      "The data type used for 'initial_state' field of state "
                      "'%s' does not match the state data type.",
                      st->input_name);
    if (in->name == NULL || in->name[0] == '\0')
      return ifd_errf(err, IFD_EINVAL,
                      "Field 'name' must be set when using initial_state for "
                      "state input '%s'.",
                      st->input_name);
    if (in->n_dims != st->n_dims)
      return ifd_errf(err, IFD_EINVAL,
                      "Number of dimensions in 'initial_state' doesn't match "
                      "the size of 'state' dimensions for state input '%s'. "
                      "%zu != %zu",
                      st->input_name, in->n_dims, st->n_dims);
    for (i = 0; i < in->n_dims; i++) {
      if (in->dims[i] == -1)
        return ifd_errf(err, IFD_EINVAL,
                        "'initial_state' field for state input name '%s' "
                        "contains variable dimensions.",
                        st->input_name);
      if (st->dims[i] != -1 && in->dims[i] != st->dims[i])
        return ifd_errf(err, IFD_EINVAL,
                        "'initial_state' dim for input name '%s' doesn't "
                        "match 'state' dim description. %" PRId64
                        " != %" PRId64,
                        st->input_name, in->dims[i], st->dims[i]);
      if (in->dims[i] < 0)
        return ifd_errf(err, IFD_EINVAL,
                        "'initial_state' dim for input name '%s' must be "
                        ">= 0, got %" PRId64,
                        st->input_name, in->dims[i]);
      shape[ndims++] = in->dims[i];
    }
    if (in->state_data_case !=
            INFERENCE__MODEL_SEQUENCE_BATCHING__INITIAL_STATE__STATE_DATA_ZERO_DATA &&
        in->state_data_case !=
            INFERENCE__MODEL_SEQUENCE_BATCHING__INITIAL_STATE__STATE_DATA_DATA_FILE)
      return ifd_errf(err, IFD_EINVAL,
                      "initial_state setting expects state '%s' to have "
                      "state_data set",
                      st->input_name);
  }

  /* A BYTES value of zeros is that many empty strings (4-byte lengths). */
  rc = ifd_shape_count(shape, ndims, &count);
  if (rc == 0)
    rc = dtype == IFD_TYPE_BYTES
             ? (count > INT64_MAX / 4 ? IFD_ETOOBIG : (size = count * 4, 0))
             : ifd_shape_byte_size(dtype, shape, ndims, &size);
  if (rc < 0 || (uint64_t)size > SIZE_MAX / 2)
    return ifd_errf(err, IFD_EINVAL, "state '%s' of model '%s' is too large",
                    st->input_name, m->name);

  b = ifd_blob_new((uint64_t)size, 1);
  if (b == NULL)
    return ifd_errf(err, IFD_ENOMEM,
                    "out of memory for the initial value of state '%s' of "
                    "model '%s'",
                    st->input_name, m->name);
  b->dtype = dtype;
  b->ndims = ndims;
  memcpy(b->shape, shape, ndims * sizeof(*shape));

  if (in != NULL &&
      in->state_data_case ==
          INFERENCE__MODEL_SEQUENCE_BATCHING__INITIAL_STATE__STATE_DATA_DATA_FILE) {
    const char *file = in->data_file != NULL ? in->data_file : "";
    if (!path_is_inside(file)) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "initial_state data_file '%s' of state '%s' must be a "
                    "relative path inside %s/initial_state",
                    file, st->input_name, m->path);
      goto out_unref;
    }
    if (asprintf(&path, "%s/initial_state/%s", m->path, file) < 0) {
      path = NULL;
      rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
      goto out_unref;
    }
    rc = read_data_file(path, file, st->input_name, dtype == IFD_TYPE_BYTES, &b,
                        err);
    if (rc < 0) goto out_unref;
    if (dtype == IFD_TYPE_BYTES &&
        ifd_bytes_validate(b->data, (size_t)b->size, count) < 0) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "initial_state data_file %s of state '%s' does not hold "
                    "%" PRId64
                    " BYTES elements (each a 4-byte little-endian "
                    "length and its bytes)",
                    file, st->input_name, count);
      goto out_unref;
    }
  }
  free(path);
  *out = b;
  return 0;

out_unref:
  free(path);
  ifd_blob_unref(b);
  return rc;
}

int ifd__seq_initial_states(const ifd_model_t *m, ifd_blob_t ***out,
                            ifd_errmsg_t *err) {
  const Inference__ModelSequenceBatching *sb = ifd_config_sequence(m->config);
  ifd_blob_t **blobs;
  size_t k, built = 0;
  int rc;

  *out = NULL;
  if (sb == NULL || sb->n_state == 0) return 0;
  for (k = 0; k < sb->n_state; k++) {
    rc = check_state(m, sb, k, err);
    if (rc < 0) return rc;
  }
  blobs = calloc(sb->n_state, sizeof(*blobs));
  if (blobs == NULL)
    return ifd_errf(err, IFD_ENOMEM, "out of memory loading model '%s'",
                    m->name);
  for (built = 0; built < sb->n_state; built++) {
    rc = build_state(m, sb->state[built], &blobs[built], err);
    if (rc < 0) goto out_free;
  }
  *out = blobs;
  return 0;

out_free:
  for (k = 0; k < built; k++) ifd_blob_unref(blobs[k]);
  free(blobs);
  return rc;
}

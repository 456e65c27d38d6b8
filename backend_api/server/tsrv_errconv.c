/*
 * backend_api/server/tsrv_errconv.c - the two-way conversion between
 * TRITONSERVER_Error objects and the server's own negative IFD_E* codes.
 *
 * Inside inferd an error is a code and a message (base/error.h); a
 * TRITONSERVER_Error exists only at the ABI edge. These are the converters
 * every family of backend_api/ uses at that edge: what a backend returns
 * becomes a code and its text, what the server answers a backend becomes a
 * new error the backend owns.
 */
#include "backend_api/internal.h"
#include "base/log.h"

int ifd__code_from_class(int cls) {
  static const int codes[] = {IFD_EUNKNOWN, IFD_EINTERNAL, IFD_ENOTFOUND,
                              IFD_EINVAL,   IFD_EUNAVAIL,  IFD_EUNSUPPORTED,
                              IFD_EEXISTS,  IFD_ECANCELLED};
  return cls >= 0 && cls < 8 ? codes[cls] : IFD_EUNKNOWN;
}

int ifd__take_error(TRITONSERVER_Error *e, const char *what,
                    ifd_errmsg_t *err) {
  int rc = ifd__code_from_class(TRITONSERVER_ErrorCode(e));
  /* The client and the repository index get the backend's text as it is,
   * as Triton passes it on; which entry point failed goes to the log. */
  IFD_VERBOSE("%s: %s", what, TRITONSERVER_ErrorMessage(e));
  ifd_errf(err, rc, "%s", TRITONSERVER_ErrorMessage(e));
  TRITONSERVER_ErrorDelete(e);
  return rc;
}

TRITONSERVER_Error *ifd__error_from(int code, const char *msg) {
  return TRITONSERVER_ErrorNew((TRITONSERVER_Error_Code)ifd_error_class(code),
                               msg != NULL ? msg : ifd_strerror(code));
}

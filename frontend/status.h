/*
 * frontend/status.h - the one table from inferd error codes to protocol status.
 *
 * Every front end turns a negative IFD_E* code into its own status through
 * these functions and nowhere else, so HTTP and (later) gRPC agree on what an
 * error means. The mapping goes through the Triton error class of the code
 * (ifd_error_class), exactly as tritonserver maps TRITONSERVER_Error_Code.
 */
#ifndef IFD_FRONTEND_STATUS_H
#define IFD_FRONTEND_STATUS_H

/**
 * HTTP status for a Triton error class (TRITONSERVER_Error_Code 0..7):
 * INTERNAL 500, NOT_FOUND 404, UNAVAILABLE 503, UNSUPPORTED 501, any other
 * class 400.
 */
int ifd_http_status_of_class(int cls);

/** HTTP status for a negative IFD_E* code (0 gives 200). */
int ifd_http_status(int code);

/**
 * gRPC status code for a Triton error class, as tritonserver maps them:
 * INTERNAL 13, NOT_FOUND 5, INVALID_ARG 3 (INVALID_ARGUMENT), UNAVAILABLE 14,
 * UNSUPPORTED 12 (UNIMPLEMENTED), ALREADY_EXISTS 6, CANCELLED 1, else 2
 * (UNKNOWN).
 */
int ifd_grpc_status_of_class(int cls);

/** gRPC status for a negative IFD_E* code (0 gives OK); IFD_ETIMEOUT is
 *  DEADLINE_EXCEEDED and IFD_ETOOBIG RESOURCE_EXHAUSTED. */
int ifd_grpc_status(int code);

#endif

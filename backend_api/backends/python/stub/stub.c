/*
 * backend_api/backends/python/stub/stub.c - triton_python_backend_stub.
 *
 * The process libtriton_python.so starts for each model instance. It embeds
 * CPython, registers the built-in module _inferd_stub (sock_fd, shm_fd: the
 * descriptors of ipc.h) and runs triton_python_backend_utils._stub_main(),
 * found in argv[1] (the backend's folder), which serves the socket until EOF
 * or FINALIZE. Exit status 0 on a clean end, 1 otherwise.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../ipc.h"

static struct PyModuleDef stub_module = {PyModuleDef_HEAD_INIT,
                                         "_inferd_stub",
                                         "inferd stub descriptors",
                                         -1,
                                         NULL,
                                         NULL,
                                         NULL,
                                         NULL,
                                         NULL};

static PyObject *stub_module_init(void) {
  PyObject *m = PyModule_Create(&stub_module);
  if (m == NULL) return NULL;
  if (PyModule_AddIntConstant(m, "sock_fd", IFD_PY_SOCK_FD) < 0 ||
      PyModule_AddIntConstant(m, "shm_fd", IFD_PY_SHM_FD) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s BACKEND_DIR\n", argv[0]);
    return 2;
  }
  if (PyImport_AppendInittab("_inferd_stub", stub_module_init) < 0) return 1;
  Py_InitializeEx(0);
  int rc = 1;
  PyObject *sys_path = PySys_GetObject("path"); /* borrowed */
  PyObject *dir = PyUnicode_DecodeFSDefault(argv[1]);
  if (sys_path == NULL || dir == NULL || PyList_Insert(sys_path, 0, dir) < 0)
    goto out;
  PyObject *mod = PyImport_ImportModule("triton_python_backend_utils");
  if (mod == NULL) goto out;
  PyObject *res = PyObject_CallMethod(mod, "_stub_main", NULL);
  Py_DECREF(mod);
  if (res == NULL) goto out;
  Py_DECREF(res);
  rc = 0;
out:
  if (PyErr_Occurred()) PyErr_Print();
  Py_XDECREF(dir);
  if (Py_FinalizeEx() < 0) rc = 1;
  return rc;
}

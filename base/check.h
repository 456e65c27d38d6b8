/*
 * base/check.h - invariants written as code: IFD_ASSERT, ALWAYS, NEVER.
 *
 * SQLite's pattern. A condition the code relies on but that cannot be
 * proved by the compiler is written down where it holds:
 *
 *   IFD_ASSERT(req->state == IFD_REQ_QUEUED);      a plain invariant
 *   if (NEVER(q == NULL)) return -1;               a branch that cannot run
 *   if (ALWAYS(m->loaded)) run(m);                 a test that always passes
 *
 * In checking builds (IFD_CHECKS=1: the ASan/UBSan and fuzz builds, and any
 * build with OPT=-O0) a broken invariant logs where and what, then aborts,
 * so the sanitizer runs of the whole test suite find it. In release builds
 * IFD_ASSERT compiles to nothing (its condition still type-checked), and
 * ALWAYS(x) / NEVER(x) are just (x): the defensive branch stays, costs one
 * predicted compare, and keeps the server serving if the impossible happens
 * anyway.
 *
 * Conditions must be free of side effects: IFD_ASSERT's is not evaluated in
 * release builds.
 */
#ifndef IFD_BASE_CHECK_H
#define IFD_BASE_CHECK_H

#ifndef IFD_CHECKS
#define IFD_CHECKS 0
#endif

/** Logs "invariant failed: <what> (<file>:<line>)" and aborts. */
_Noreturn void ifd_check_failed(const char *what, const char *file, int line);

#if IFD_CHECKS
#define IFD_ASSERT(x) ((x) ? (void)0 : ifd_check_failed(#x, __FILE__, __LINE__))
#define ALWAYS(x) ((x) ? 1 : (ifd_check_failed(#x, __FILE__, __LINE__), 0))
#define NEVER(x) ((x) ? (ifd_check_failed(#x, __FILE__, __LINE__), 1) : 0)
#else
/* Not evaluated, still compiled: a condition that stops compiling (a field
 * moved) breaks the release build too, not only the checking ones. */
#define IFD_ASSERT(x) ((void)sizeof(!(x)))
#define ALWAYS(x) __builtin_expect(!!(x), 1)
#define NEVER(x) __builtin_expect(!!(x), 0)
#endif

#endif

"""The memcpy-bound limit of issue 13's shared-memory figure (bench/run.sh, section shm).

usage: memcpy_limit.py BYTES SECONDS OUT.json

With the tensors in shared memory, the only work a request of the identity
model must do is the backend's one copy of BYTES from the input region to the
output region. This copies BYTES between two shared anonymous mappings (the
same shmem pages a POSIX shared memory object is made of), both touched
first, with libc's memmove (ctypes: one call per copy, its overhead is
microseconds against milliseconds), back to back for SECONDS in slices of
0.25 s, and writes {"bytes", "copies", "seconds", "slices", "copies_per_s"
(the best slice's rate), "median_copies_per_s", "overall_copies_per_s",
"gb_per_s", "us_per_copy" (both of the best slice)} to OUT.json. run.sh runs
it pinned to the server's core while the server is idle, so copies_per_s is
the most requests per second that core could complete if a request cost
nothing but the copy; the best slice, because other work on a shared machine
only ever slows a slice down.
"""
import ctypes
import json
import mmap
import sys
import time

SLICE = 0.25  # seconds per measured slice


def main():
    size, seconds, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    src = mmap.mmap(-1, size)
    dst = mmap.mmap(-1, size)
    s = (ctypes.c_char * size).from_buffer(src)
    d = (ctypes.c_char * size).from_buffer(dst)
    sa, da = ctypes.addressof(s), ctypes.addressof(d)
    # Touch every page of both (first-touch faults are not part of a copy)
    # and give the source non-zero contents.
    ctypes.memset(sa, 1, size)
    ctypes.memset(da, 0, size)
    for _ in range(3):  # warm-up
        ctypes.memmove(da, sa, size)
    # Slices of SLICE seconds: the machine may be shared, and the best
    # slice is the core's limit (the median and the whole run are kept too).
    rates = []
    copies = 0
    t0 = time.perf_counter()
    end = t0 + seconds
    while True:
        n = 0
        ts = time.perf_counter()
        while True:
            ctypes.memmove(da, sa, size)
            n += 1
            t = time.perf_counter()
            if t - ts >= SLICE:
                break
        rates.append(n / (t - ts))
        copies += n
        if t >= end:
            break
    dt = t - t0
    rates.sort()
    best = rates[-1]
    doc = {
        "bytes": size,
        "copies": copies,
        "seconds": dt,
        "slices": len(rates),
        "copies_per_s": best,
        "median_copies_per_s": rates[len(rates) // 2],
        "overall_copies_per_s": copies / dt,
        "gb_per_s": best * size / 1e9,
        "us_per_copy": 1e6 / best,
    }
    del s, d
    src.close()
    dst.close()
    with open(out, "w") as f:
        json.dump(doc, f)
    print("memcpy %d bytes: best %.1f copies/s (%.2f GB/s, %.0f us per copy), median %.1f, "
          "overall %.1f" % (size, best, doc["gb_per_s"], doc["us_per_copy"],
                            doc["median_copies_per_s"], doc["overall_copies_per_s"]))


if __name__ == "__main__":
    main()

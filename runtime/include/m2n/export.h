/*===- m2n/export.h - What the runtime's libraries export -----------*- C -*-===
 *
 * M2N_API marks the functions of the C API. The runtime's shared library
 * (M2N_RUNTIME_SHARED) hides every other symbol, its C++ internals
 * included, so that an engine sees the C ABI alone; a static library
 * exports the same functions to whatever links it.
 *
 *===----------------------------------------------------------------------===*/

#ifndef M2N_EXPORT_H
#define M2N_EXPORT_H

#if defined(M2N_RUNTIME_BUILDING) && defined(__GNUC__)
#define M2N_API __attribute__((visibility("default")))
#else
#define M2N_API
#endif

#endif /* M2N_EXPORT_H */

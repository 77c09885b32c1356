/*
 * weft — version: the single source of the library's version.
 * meson.build reads the three numbers below; nothing else states them.
 */
#ifndef WEFT_VERSION_H
#define WEFT_VERSION_H

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 2
#define WEFT_VERSION_PATCH 0

#define WEFT_VERSION_STRING_(a, b, c) #a "." #b "." #c
#define WEFT_VERSION_STRING_X_(a, b, c) WEFT_VERSION_STRING_(a, b, c)
#define WEFT_VERSION_STRING \
  WEFT_VERSION_STRING_X_(WEFT_VERSION_MAJOR, WEFT_VERSION_MINOR, WEFT_VERSION_PATCH)

/* The version of the library actually loaded, e.g. "0.1.0" (a program may
 * run against another build than the header it was compiled with). */
#ifdef __cplusplus
extern "C" {
#endif
#if defined(WEFT_BUILDING) && defined(__GNUC__)
__attribute__((visibility("default")))
#endif
const char *weft_version(void);
#ifdef __cplusplus
}
#endif

#endif /* WEFT_VERSION_H */

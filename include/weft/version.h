/*
 * weft — version: the single source of the library's version.
 * meson.build reads the three numbers below; nothing else states them.
 */
#ifndef WEFT_VERSION_H
#define WEFT_VERSION_H

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0

#define WEFT_VERSION_STRING_(a, b, c) #a "." #b "." #c
#define WEFT_VERSION_STRING_X_(a, b, c) WEFT_VERSION_STRING_(a, b, c)
#define WEFT_VERSION_STRING \
  WEFT_VERSION_STRING_X_(WEFT_VERSION_MAJOR, WEFT_VERSION_MINOR, WEFT_VERSION_PATCH)

#endif /* WEFT_VERSION_H */

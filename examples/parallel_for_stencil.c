/* SPDX-License-Identifier: MIT */
/*
 * Parallel loops: a 5-point stencil over an image, with weft_parallel_for.
 *
 * Each iteration computes every interior pixel of `next` from the pixel and
 * its four neighbours in `cur`, then the two buffers swap (double buffering:
 * no pixel is read after it was overwritten in the same iteration). The
 * border stays fixed. The rows of one iteration are independent, so each
 * iteration is one parallel loop over the rows.
 *
 * usage: parallel_for_stencil [WIDTH HEIGHT ITERATIONS]   (default 1024 1024 50)
 * Checks the result against a serial run, bit for bit.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <weft/weft.h>

typedef struct image {
  size_t w, h;
  double *cur, *next; /* h rows of w pixels each */
} image;

/* Computes rows [y0, y1) of img->next from img->cur. The serial and the
 * parallel runs both call this, so each pixel is the same expression on the
 * same inputs: the results are identical, bit for bit. */
static void stencil_rows(image *img, size_t y0, size_t y1)
{
  size_t w = img->w;
  for (size_t y = y0; y < y1; y++) {
    const double *up = img->cur + (y - 1) * w, *row = up + w, *down = row + w;
    double *out = img->next + y * w;
    for (size_t x = 1; x + 1 < w; x++)
      out[x] = 0.5 * row[x] + 0.125 * (up[x] + down[x] + row[x - 1] + row[x + 1]);
  }
}

/* A weft_range_fn: one chunk of rows. */
static int stencil_chunk(size_t begin, size_t end, void *arg)
{
  stencil_rows(arg, begin, end);
  return 0;
}

static void swap_buffers(image *img)
{
  double *t = img->cur;
  img->cur = img->next;
  img->next = t;
}

static int image_init(image *img, size_t w, size_t h)
{
  img->w = w;
  img->h = h;
  img->cur = malloc(w * h * sizeof(double));
  img->next = malloc(w * h * sizeof(double));
  if (!img->cur || !img->next)
    return -1;
  /* A deterministic picture: a gradient with a few bright squares. The
   * border is copied into both buffers, since no iteration writes it. */
  for (size_t y = 0; y < h; y++)
    for (size_t x = 0; x < w; x++) {
      double v = (double)(x + y) / (double)(w + h);
      if ((x / 64 + y / 64) % 5 == 0)
        v += 4.0;
      img->cur[y * w + x] = img->next[y * w + x] = v;
    }
  return 0;
}

static double now(void)
{
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
  size_t w = 1024, h = 1024;
  int iterations = 50;
  if (argc > 3) {
    w = strtoul(argv[1], NULL, 10);
    h = strtoul(argv[2], NULL, 10);
    iterations = atoi(argv[3]);
  }
  if (w < 3 || h < 3 || iterations < 0) {
    fprintf(stderr, "usage: %s [WIDTH HEIGHT ITERATIONS] (width, height >= 3)\n", argv[0]);
    return 2;
  }

  image par, ser;
  if (image_init(&par, w, h) || image_init(&ser, w, h)) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }

  weft_pool *pool;
  int rc = weft_pool_create(&pool, NULL);
  if (rc) {
    fprintf(stderr, "weft_pool_create: %s\n", weft_strerror(rc));
    return 1;
  }

  /* The grain is the fewest rows one call of stencil_chunk gets. A chunk of
   * about 16k pixels takes some microseconds, far more than handing it to
   * another worker, and the loop still splits into enough chunks to balance
   * (weft splits adaptively, only as idle workers ask for work). */
  size_t grain = 16384 / w ? 16384 / w : 1;
  double t0 = now();
  for (int it = 0; it < iterations && !rc; it++) {
    rc = weft_parallel_for(pool, 1, h - 1, grain, stencil_chunk, &par);
    swap_buffers(&par); /* parallel_for returned: every row is done */
  }
  double t1 = now();
  weft_pool_destroy(pool);
  if (rc) {
    fprintf(stderr, "weft_parallel_for: %s\n", weft_strerror(rc));
    return 1;
  }

  for (int it = 0; it < iterations; it++) {
    stencil_rows(&ser, 1, h - 1);
    swap_buffers(&ser);
  }
  double t2 = now();

  int ok = memcmp(par.cur, ser.cur, w * h * sizeof(double)) == 0;
  printf("parallel_for_stencil: %zux%zu, %d iterations: parallel %.1f ms, serial %.1f ms: %s\n",
         w, h, iterations, (t1 - t0) * 1e3, (t2 - t1) * 1e3,
         ok ? "identical" : "DIFFERENT");
  free(par.cur);
  free(par.next);
  free(ser.cur);
  free(ser.next);
  return ok ? 0 : 1;
}

/*
 * Assertion macros for crsim's tests (after libuv's ASSERT_EQ): each prints
 * the expression, both operands and the location, then exits 1.  Exit 77
 * tells meson a test was skipped, 99 a hard error.
 */
#ifndef CRSIM_TESTS_CHECK_H
#define CRSIM_TESTS_CHECK_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

#define CHECK_INT_EQ(a, b)                                                   \
    do {                                                                     \
        long long a_ = (long long)(a), b_ = (long long)(b);                  \
        if (a_ != b_) {                                                      \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n",        \
                    __FILE__, __LINE__, #a, #b, a_, b_);                     \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

#define CHECK_U64_EQ(a, b)                                                   \
    do {                                                                     \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                     \
        if (a_ != b_) {                                                      \
            fprintf(stderr, "%s:%d: %s == %s failed: %" PRIu64 " != %" PRIu64 \
                    "\n", __FILE__, __LINE__, #a, #b, a_, b_);               \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* |a - b| <= tol */
#define CHECK_NEAR(a, b, tol)                                                \
    do {                                                                     \
        double a_ = (double)(a), b_ = (double)(b), t_ = (double)(tol);       \
        if (!(fabs(a_ - b_) <= t_)) {                                        \
            fprintf(stderr, "%s:%d: |%s - %s| <= %s failed: %.17g vs %.17g " \
                    "(diff %.3g)\n", __FILE__, __LINE__, #a, #b, #tol, a_,   \
                    b_, fabs(a_ - b_));                                      \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* Relative error |a - b| / |b| <= rel */
#define CHECK_REL(a, b, rel)                                                 \
    do {                                                                     \
        double a_ = (double)(a), b_ = (double)(b), r_ = (double)(rel);       \
        if (!(fabs(a_ - b_) <= r_ * fabs(b_))) {                             \
            fprintf(stderr, "%s:%d: %s ~ %s within %s failed: %.17g vs "     \
                    "%.17g (rel %.3g)\n", __FILE__, __LINE__, #a, #b, #rel,  \
                    a_, b_, fabs(a_ - b_) / fabs(b_));                       \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                      \
    do {                                                                     \
        const char *h_ = (hay), *n_ = (needle);                              \
        if (!h_ || !strstr(h_, n_)) {                                        \
            fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n",       \
                    __FILE__, __LINE__, h_ ? h_ : "(null)", n_);             \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

#endif

/*
 * The decimal number reader; see number.h.
 */
#include "sim/core/number.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool sim_num_is_decimal(const char *s)
{
    size_t digits = 0;
    if (*s == '+' || *s == '-')
        s++;
    for (; is_digit(*s); s++)
        digits++;
    if (*s == '.')
        for (s++; is_digit(*s); s++)
            digits++;
    if (digits == 0)
        return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!is_digit(*s))
            return false;
        while (is_digit(*s))
            s++;
    }
    return *s == '\0';
}

bool sim_num_real(const char *s, double lo, double hi, double *v)
{
    if (!sim_num_is_decimal(s))
        return false;
    errno = 0;
    const double x = strtod(s, NULL);
    if ((errno == ERANGE && isinf(x)) || !isfinite(x) || !(x >= lo) || !(x <= hi))
        return false;
    *v = x;
    return true;
}

/* The magnitude of [-+]?[0-9]+ into *m and its sign into *neg; false on
 * another form or a magnitude above UINT64_MAX. */
static bool magnitude(const char *s, bool allow_minus, uint64_t *m, bool *neg)
{
    *neg = false;
    if (*s == '+' || (allow_minus && *s == '-'))
        *neg = *s++ == '-';
    if (!is_digit(*s))
        return false;
    uint64_t x = 0;
    for (; is_digit(*s); s++) {
        const uint64_t d = (uint64_t)(*s - '0');
        if (x > (UINT64_MAX - d) / 10)
            return false;
        x = x * 10 + d;
    }
    *m = x;
    return *s == '\0';
}

bool sim_num_i64(const char *s, int64_t lo, int64_t hi, int64_t *v)
{
    uint64_t m;
    bool neg;
    if (!magnitude(s, true, &m, &neg))
        return false;
    int64_t x;
    if (neg) {
        if (m > (uint64_t)INT64_MAX + 1)
            return false;
        x = m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
    } else {
        if (m > (uint64_t)INT64_MAX)
            return false;
        x = (int64_t)m;
    }
    if (x < lo || x > hi)
        return false;
    *v = x;
    return true;
}

bool sim_num_u64(const char *s, uint64_t hi, uint64_t *v)
{
    uint64_t m;
    bool neg;
    if (!magnitude(s, false, &m, &neg) || m > hi)
        return false;
    *v = m;
    return true;
}

/* Length distributions of the synthetic generators (workloads/lendist.h). */
#include "workloads/lendist.h"

#include "workloads/internal.h"

wl__lendist wl__lendist_make(const wl_lenspec *l)
{
    wl__lendist d = {.mean = l->mean, .min = (uint32_t)l->min, .max = (uint32_t)l->max};
    const int k = wl__name_index(wl_lendist_names, l->dist);
    if (k == WL_LEN_UNIFORM) {
        d.kind = WL_LEN_UNIFORM;
    } else if (k == WL_LEN_CONST || l->cv == 0) {
        d.kind = WL_LEN_CONST;
    } else if (k == WL_LEN_LOGNORMAL) {
        d.kind = WL_LEN_LOGNORMAL;
        const double s2 = log1p(l->cv * l->cv);
        d.b = sqrt(s2);
        d.a = log(l->mean) - s2 / 2;
    } else {
        d.kind = WL_LEN_GAMMA;
        d.a = 1.0 / (l->cv * l->cv);
        d.b = l->mean * l->cv * l->cv;
    }
    return d;
}

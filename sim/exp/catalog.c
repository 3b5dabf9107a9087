/*
 * `crsim spec import-hf` (catalog.h): glue between the command line and
 * models/spec_hf.c.  The written file is loaded back through the spec
 * schema before the command reports success, so an import cannot produce
 * a spec crsim would refuse.
 */
#include "sim/exp/catalog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/spec_hf.h"
#include "models/spec_load.h"
#include "sim/core/error.h"

int exp_spec_import_main(const exp_cli_args *a, FILE *out)
{
    const char *name = exp_cli_str(a, "name", NULL), *path = exp_cli_str(a, "out", NULL);
    spec_model m;
    spec_hf_detail dt;
    int rc = spec_model_from_hf(a->pos[0], name, &m, &dt);
    if (rc)
        return rc;
    if (!*name || strchr(name, '"') || strchr(name, '\n') || strchr(name, ':')) {
        spec_model_fini(&m);
        return SIM_ERROR(SIM_EINVAL, "spec import-hf: --name '%s'; expected a model name such "
                         "as Qwen3-8B (no quotes, colons or line breaks)", name);
    }
    if (!path) {
        rc = spec_model_write_yaml(&m, &dt, out);
        spec_model_fini(&m);
        return rc;
    }
    /* Written to a temporary file beside the target, checked, renamed. */
    size_t n = strlen(path) + 40;
    char *tmp = sim_xmalloc(n);
    snprintf(tmp, n, "%s%s.tmp%ld.yaml", strchr(path, '/') ? "" : "./", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        rc = SIM_ERROR(SIM_EIO, "spec import-hf: cannot create %s: %s", tmp, strerror(errno));
    } else {
        rc = spec_model_write_yaml(&m, &dt, f);
        if (fclose(f) != 0 && rc == SIM_OK)
            rc = SIM_ERROR(SIM_EIO, "spec import-hf: cannot write %s: %s", tmp,
                           strerror(errno));
        spec_model back;
        if (rc == SIM_OK && (rc = spec_model_load(tmp, &back)) == SIM_OK)
            spec_model_fini(&back);
        if (rc == SIM_OK && rename(tmp, path) != 0)
            rc = SIM_ERROR(SIM_EIO, "spec import-hf: cannot rename %s to %s: %s", tmp, path,
                           strerror(errno));
        if (rc)
            remove(tmp);
    }
    if (rc == SIM_OK)
        fprintf(out, "wrote %s (%s: %lld layers, hidden %lld, %lld/%lld heads of %lld, %.4g "
                "parameters)\n", path, m.name, (long long)m.layers, (long long)m.hidden,
                (long long)m.q_heads, (long long)m.kv_heads, (long long)m.head_dim, m.params);
    free(tmp);
    spec_model_fini(&m);
    return rc;
}

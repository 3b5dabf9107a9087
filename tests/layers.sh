#!/bin/sh
# The layers of the tree (docs/design.md): includes are root-relative and
# run one way, sim/exp -> models -> workloads -> sim/core.  Fails, naming
# the file and line, on a "../" include or an include against the flow.
# usage: layers.sh SOURCE_ROOT
set -u
cd "$1" || exit 99
bad=0
report() { echo "layers: $*"; bad=1; }
# 1. No relative "../" includes anywhere in the code.
hits=$(grep -rn '#[[:space:]]*include[[:space:]]*"\.\./' sim models workloads tests)
[ -n "$hits" ] && report "relative includes (expected root-relative, e.g. \"sim/core/evq.h\"):
$hits"
# 2. Each layer includes only itself and the layers below it.
check() { # DIR ALLOWED-REGEX
    dir=$1; allowed=$2
    grep -rn '#[[:space:]]*include[[:space:]]*"' "$dir" --include='*.c' --include='*.h' |
    while IFS= read -r line; do
        inc=$(printf '%s\n' "$line" | sed 's/.*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/')
        case "$inc" in version.h) continue ;; esac
        printf '%s\n' "$inc" | grep -Eq "$allowed" || echo "$line"
    done
}
out=$(check sim/core '^sim/core/')
[ -n "$out" ] && report "sim/core includes outside sim/core:
$out"
out=$(check workloads '^(workloads|sim/core)/')
[ -n "$out" ] && report "workloads includes above it (allowed: workloads/, sim/core/):
$out"
out=$(check models '^(models|workloads|sim/core)/')
[ -n "$out" ] && report "models includes above it (allowed: models/, workloads/, sim/core/):
$out"
# 3. Internal headers stay inside their module.
#    (Tests of routers may; so may the reference copy of a router that
#    equiv_ref_sim links in its place, tests/route_*_ref.c.)
out=$(grep -rln --include='*.[ch]' '"models/routers/route_int.h"' sim workloads tests | grep -Ev '^tests/(test_route|route_[a-z_]+_ref\.c$)')
[ -n "$out" ] && report "models/routers/route_int.h included outside models/routers/: $out"
out=$(grep -rln --include='*.[ch]' '"models/routers/route_int.h"' models | grep -v '^models/routers/')
[ -n "$out" ] && report "models/routers/route_int.h included in models/ outside the routers folder (the plug-in boundary is models/routers/route.h): $out"
#    Routers are plug-ins: every router file lives in models/routers/, and
#    nothing outside it defines a router type.
out=$(ls models/route*.c models/route*.h 2>/dev/null)
[ -n "$out" ] && report "router files outside models/routers/: $out"
out=$(grep -ln '^const route_type route_' models/*.c sim/exp/*.c workloads/*.c 2>/dev/null)
[ -n "$out" ] && report "a router type defined outside models/routers/: $out"
out=$(grep -rln --include='*.[ch]' '"sim/exp/report_int.h"' models workloads sim/core tests sim/exp | grep -Ev '^(sim/exp/(report(_[a-z]+)?|plot)\.c|tests/test_fit\.c)$')
[ -n "$out" ] && report "sim/exp/report_int.h included outside the report (sim/exp/report*.c), plot.c and its unit test tests/test_fit.c: $out"
# 4. The result store is a boundary: SQL lives in sim/exp/store*.c, and
#    only the store's internal header includes <sqlite3.h>.
out=$(grep -l 'sqlite3' sim/exp/*.c | grep -Ev '^sim/exp/store(_[a-z]+)?\.c$')
[ -n "$out" ] && report "SQLite used outside the result store (expected exp_store_* calls, sim/exp/store.h): $out"
out=$(grep -rln --include='*.[ch]' '#[[:space:]]*include[[:space:]]*<sqlite3\.h>' sim models workloads |
      grep -v '^sim/exp/store_int\.h$')
[ -n "$out" ] && report "<sqlite3.h> included outside sim/exp/store_int.h: $out"
out=$(grep -rln --include='*.[ch]' '"sim/exp/store_int.h"' sim models workloads tests |
      grep -Ev '^sim/exp/store(_[a-z]+)?\.c$')
[ -n "$out" ] && report "sim/exp/store_int.h included outside the store: $out"
[ $bad -eq 0 ] && echo "layers: ok (sim/exp -> models -> workloads -> sim/core; SQL only in the store)"
exit $bad

#!/usr/bin/env bash
# The one rule of the layers, checked on the sources' #include lines:
#   tuner/   the ground: includes nothing of the project's other folders;
#   probe/   the hardware assessment: tuner/ only;
#   search/, kernels/, results/: tuner/ (kernels/ also probe/), never each other;
#   tools/   on top: anything.
# Usage: check_layers.sh [ROOT]   (default: the source tree). Prints each include that breaks the
# rule with its file and line, and exits 1 when there is any.
#        check_layers.sh --self-test   shows the check fails: a tree with one include against each
#        rule must give exactly those, and a tree that keeps the rule none.
set -uo pipefail
if [ "${1:-}" = --self-test ]; then
  t=$(mktemp -d) && trap 'rm -rf "$t"' EXIT
  mkdir -p "$t"/{tuner,probe,search,kernels/tcp,results,tools}
  printf '#include "tuner/a.hpp"\n#include <vector>\n' >"$t/tuner/ok.cpp"
  printf '#include "tuner/a.hpp"\n#include "probe/nvml.hpp"\n#include "kernels/shared/peer.hpp"\n' >"$t/kernels/tcp/ok.cpp"
  printf '#include "kernels/x.hpp"\n#include "search/x.hpp"\n#include "results/x.hpp"\n' >"$t/tools/ok.cpp"
  if ! "$0" "$t" >/dev/null; then echo "check_layers: refused a tree that keeps the layers"; exit 1; fi
  printf '#include "kernels/shared/peer.hpp"\n' >"$t/tuner/a.cpp"      # ground reaching up
  printf '#include "search/gp.hpp"\n' >"$t/tuner/b.hpp"
  printf '#include "kernels/x.hpp"\n' >"$t/probe/c.cpp"           # probe above kernels
  printf '  #  include "results/x.hpp"\n' >"$t/search/d.cpp"      # siblings
  printf '#include "search/gp.hpp"\n' >"$t/kernels/tcp/e.cpp"
  printf '#include "tools/cli.hpp"\n' >"$t/results/f.cpp"         # reaching the top
  got=$("$0" "$t" | grep -c ': includes\|includes "')
  if [ "$got" != 6 ]; then echo "check_layers: found $got of the 6 includes against the layers"; exit 1; fi
  echo "check_layers: self-test found all 6 includes against the layers"
  exit 0
fi
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || { echo "check_layers: no folder $root" >&2; exit 2; }

allowed() {  # folder -> the folders its sources may include
  case $1 in
    tuner) echo "tuner" ;;
    probe) echo "tuner probe" ;;
    search) echo "tuner search" ;;
    kernels) echo "tuner probe kernels" ;;
    results) echo "tuner results" ;;
  esac
}

bad=0 files=0
for layer in tuner probe search kernels results; do
  [ -d "$layer" ] || continue
  ok=" $(allowed "$layer") "
  while IFS= read -r -d '' f; do
    files=$((files + 1))
    while IFS=: read -r line text; do
      inc=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)".*/\1/' <<<"$text")
      top=${inc%%/*}
      [ "$top" = "$inc" ] && continue  # a file beside it or a system header
      case $top in tuner | probe | search | kernels | results | tools) ;; *) continue ;; esac
      if [[ $ok != *" $top "* ]]; then
        echo "$f:$line: $layer/ includes \"$inc\": $layer/ may include only $(allowed "$layer" | sed 's/ /\/, /g')/"
        bad=$((bad + 1))
      fi
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f")
  done < <(find "$layer" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.c' -o -name '*.cu' \) -print0)
done
if [ "$bad" -gt 0 ]; then
  echo "check_layers: $bad include(s) against the layers in $files files"
  exit 1
fi
echo "check_layers: $files files keep the layers"

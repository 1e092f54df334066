#!/usr/bin/env bash
# The rule of the layers, checked on the sources' #include lines. Each source may include only
# what its place allows (the most specific place wins):
#   tuner/               the ground: tuner/ only
#   probe/               the machine's assessment: tuner/, probe/
#   search/              tuner/, search/
#   kernels/shared/      tuner/, probe/, kernels/shared/
#   kernels/FAMILY/      tuner/, probe/, kernels/shared/ and its own folder: never another family
#   results/             tuner/, probe/, results/
#   tools/loader/        runs inside jobs: tuner/ and its own folder only (no probe, no kernel)
#   tools/nccl-plugin/   runs inside NCCL: its own folder, tuner/regular_file.hpp and the table
#                        reader results/nccl_tuner_table.hpp only
#   tools/               on top: anything
# Usage: check_layers.sh [ROOT]   (default: the source tree). Prints each include that breaks the
# rule with its file and line, and exits 1 when there is any.
#        check_layers.sh --self-test   shows the check fails: a tree with one include against each
#        rule must give exactly those, and a tree that keeps the rule none.
set -uo pipefail
if [ "${1:-}" = --self-test ]; then
  t=$(mktemp -d) && trap 'rm -rf "$t"' EXIT
  mkdir -p "$t"/{tuner,probe,search,kernels/tcp,kernels/ucx,kernels/shared,results,tools/loader,tools/nccl-plugin}
  printf '#include "tuner/a.hpp"\n#include <vector>\n' >"$t/tuner/ok.cpp"
  printf '#include "tuner/a.hpp"\n#include "probe/nvml.hpp"\n#include "kernels/tcp/x.hpp"\n#include "kernels/shared/y.hpp"\n' >"$t/kernels/tcp/ok.cpp"
  printf '#include "probe/links.hpp"\n#include "results/x.hpp"\n' >"$t/results/ok.cpp"
  printf '#include "kernels/x.hpp"\n#include "search/x.hpp"\n#include "results/x.hpp"\n' >"$t/tools/ok.cpp"
  printf '#include "tuner/best.hpp"\n#include "tools/loader/x.hpp"\n' >"$t/tools/loader/ok.cpp"
  printf '#include "results/nccl_tuner_table.hpp"\n#include "tuner/regular_file.hpp"\n' >"$t/tools/nccl-plugin/ok.cpp"
  if ! "$0" "$t" >/dev/null; then echo "check_layers: refused a tree that keeps the layers"; "$0" "$t"; exit 1; fi
  printf '#include "kernels/shared/peer.hpp"\n' >"$t/tuner/a.cpp"      # ground reaching up
  printf '#include "search/gp.hpp"\n' >"$t/tuner/b.hpp"
  printf '#include "kernels/x.hpp"\n' >"$t/probe/c.cpp"           # probe above kernels
  printf '  #  include "results/x.hpp"\n' >"$t/search/d.cpp"      # siblings
  printf '#include "search/gp.hpp"\n' >"$t/kernels/tcp/e.cpp"
  printf '#include "tools/cli.hpp"\n' >"$t/results/f.cpp"         # reaching the top
  printf '#include "kernels/tcp/peer.hpp"\n' >"$t/kernels/ucx/g.cpp"  # one family into another
  printf '#include "probe/fingerprint.hpp"\n' >"$t/tools/loader/h.cpp"  # the loader taking the probe
  printf '#include "results/compare.hpp"\n' >"$t/tools/nccl-plugin/i.cpp"  # the plugin taking more of results/
  got=$("$0" "$t" | grep -c 'includes "')
  if [ "$got" != 9 ]; then echo "check_layers: found $got of the 9 includes against the layers"; "$0" "$t"; exit 1; fi
  echo "check_layers: self-test found all 9 includes against the layers"
  exit 0
fi
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || { echo "check_layers: no folder $root" >&2; exit 2; }

# A source's path -> the include prefixes it may use (a prefix ending in / is a folder).
allowed() {
  case $1 in
    tuner/*) echo "tuner/" ;;
    probe/*) echo "tuner/ probe/" ;;
    search/*) echo "tuner/ search/" ;;
    kernels/shared/*) echo "tuner/ probe/ kernels/shared/" ;;
    kernels/*/*) local fam=${1#kernels/}; echo "tuner/ probe/ kernels/shared/ kernels/${fam%%/*}/" ;;
    kernels/*) echo "tuner/ probe/ kernels/shared/" ;;
    results/*) echo "tuner/ probe/ results/" ;;
    tools/loader/*) echo "tuner/ tools/loader/" ;;
    tools/nccl-plugin/*) echo "tools/nccl-plugin/ tuner/regular_file.hpp results/nccl_tuner_table.hpp" ;;
    tools/*) echo "tuner/ probe/ search/ kernels/ results/ tools/" ;;
  esac
}

bad=0 files=0
for place in tuner probe search kernels results tools; do
  [ -d "$place" ] || continue
  while IFS= read -r -d '' f; do
    files=$((files + 1))
    ok=$(allowed "$f")
    while IFS=: read -r line text; do
      inc=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)".*/\1/' <<<"$text")
      top=${inc%%/*}
      [ "$top" = "$inc" ] && continue  # a file beside it or a system header
      case $top in tuner | probe | search | kernels | results | tools) ;; *) continue ;; esac
      fine=0
      for p in $ok; do
        if [[ $p == */ && $inc == "$p"* ]] || [ "$inc" = "$p" ]; then fine=1; break; fi
      done
      if [ $fine = 0 ]; then
        echo "$f:$line: includes \"$inc\": ${f%/*}/ may include only $(sed 's/ /, /g' <<<"$ok")"
        bad=$((bad + 1))
      fi
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f")
  done < <(find "$place" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.c' -o -name '*.cu' \) -print0)
done
if [ "$bad" -gt 0 ]; then
  echo "check_layers: $bad include(s) against the layers in $files files"
  exit 1
fi
echo "check_layers: $files files keep the layers"
